"""The database's connections are bounded by the declaration (cdk_app/declaration.py): every
function that uses the database has a concurrency cap (reserved concurrency, or its queue's
maximum concurrency), and the caps times each environment's pool stay within the budget,
itself under what Aurora PostgreSQL Serverless v2 allows (docs/operator-guide.md "Database
connections")."""

from __future__ import annotations

from dataclasses import replace

from cdk_app.declaration import (
    API,
    DATABASE_CONNECTION_BUDGET,
    DB_POOL_MAX_SIZE,
    DEPLOYMENT,
    JOBS,
    JOBS_CONSUMER,
)
from gpudev.settings import DatabaseSettings

# Aurora PostgreSQL Serverless v2's max_connections follows the maximum ACUs: 189 with a
# maximum of 1 ACU (the smallest range, 0.5-1), ~1,669 with our maximum of 8.
MAX_CONNECTIONS_AT_1_ACU = 189


def test_every_function_that_uses_the_database_has_a_concurrency_cap():
    connections = DEPLOYMENT.database_connections(DB_POOL_MAX_SIZE)
    assert connections and None not in connections.values(), connections


def test_the_caps_times_the_pool_stay_within_the_budget_and_under_the_smallest_instance():
    total = sum(DEPLOYMENT.database_connections(DB_POOL_MAX_SIZE).values())  # type: ignore[arg-type]
    assert total <= DATABASE_CONNECTION_BUDGET < MAX_CONNECTIONS_AT_1_ACU
    assert total == 118  # the figure docs/operator-guide.md gives


def test_the_declared_pool_size_is_the_settings_default():
    settings = DatabaseSettings(database_url="postgresql://localhost/gpudev")
    assert settings.db_pool_max_size == DB_POOL_MAX_SIZE


def test_the_jobs_consumer_is_capped_by_its_queue_not_by_throttles():
    # a throttled batch returns to the queue and counts a receive towards the dead-letter
    # queue: the consumer's bound is the event source's maximum concurrency
    assert JOBS_CONSUMER.reserved_concurrency is None
    assert JOBS.max_concurrency is not None and 2 <= JOBS.max_concurrency <= 1000
    assert DEPLOYMENT.concurrency_cap(JOBS_CONSUMER.name) == JOBS.max_concurrency


def test_a_function_without_a_cap_is_unbounded():
    uncapped = replace(DEPLOYMENT, functions=(replace(API, reserved_concurrency=None),))
    assert uncapped.database_connections(DB_POOL_MAX_SIZE) == {API.name: None}


def test_the_lower_of_reserved_and_queue_concurrency_caps_a_consumer():
    both = replace(
        DEPLOYMENT,
        functions=(replace(JOBS_CONSUMER, reserved_concurrency=3),),
        queues=(replace(JOBS, max_concurrency=5),),
    )
    assert both.concurrency_cap(JOBS_CONSUMER.name) == 3
