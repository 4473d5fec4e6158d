"""A backlog of jobs after a database outage drains with the database's connections bounded
and no job in the dead-letter queue (tests/support/connection_storm.py; the 1,000-job run is
bench/connection_storm.py).

What it shows on the local cloud: the consumer, in processes of its own each with its own
pool, never holds more than its concurrency cap times its pool, and every function that ran
stays within its share of the connection budget. What only AWS shows: Lambda's own scaling
of an event source (the local cloud never polls more than five batches at once) and
Aurora's max_connections (docs/operator-guide.md "Database connections")."""

from __future__ import annotations

from pathlib import Path

from cdk_app.declaration import DB_POOL_MAX_SIZE, DEPLOYMENT, JOBS_CONSUMER
from tests.support.connection_storm import CONSUMER, run


def test_a_backlog_after_a_database_outage_drains_within_the_connection_budget(
    state_dir: Path,
):
    report = run(state_dir, jobs=200, outage_seconds=20, processes=8)

    assert report.dead_letters == 0  # no job failed three times
    budget = {
        spec.deployed_name: connections
        for spec in DEPLOYMENT.functions
        if (connections := DEPLOYMENT.database_connections(DB_POOL_MAX_SIZE).get(spec.name))
    }
    consumer_cap = DEPLOYMENT.concurrency_cap(JOBS_CONSUMER.name)
    assert report.peak_by_name[CONSUMER] <= budget[CONSUMER] == consumer_cap * DB_POOL_MAX_SIZE  # type: ignore[operator]
    assert report.consumer_processes <= consumer_cap  # type: ignore[operator]
    for name, peak in report.peak_by_name.items():
        if name in budget:  # the functions' own; the local cloud's are not deployed
            assert peak <= budget[name], (name, peak, budget[name])
    assert report.samples > 100  # the sampler did watch the drain
