"""Each principal's request bucket (gpudev/ratelimit/, migration 0028) against real
PostgreSQL: a burst past the bucket is refused with how long to wait while another
principal is untouched; the bucket refills at its rate; concurrent requests of one principal
never take more than the burst; a refusal writes nothing; the API's role may run it."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest

from gpudev.errors import RateLimited
from gpudev.ratelimit.rules import RequestRate
from gpudev.ratelimit.service import take_request
from tests.support.counting import CountingConnection
from tests.support.submitters import ALICE, BOB, IMPOSTOR


def _bucket(conn: psycopg.Connection[Any], principal: str) -> tuple[float, Any] | None:
    row = conn.execute(
        "SELECT tokens, refilled_at FROM api_request_buckets WHERE principal_arn = %s",
        (principal,),
    ).fetchone()
    return None if row is None else (row[0], row[1])


def test_a_burst_past_the_bucket_is_refused_while_another_principal_still_gets_through(
    autocommit_conn: psycopg.Connection[Any],
):
    rate = RequestRate(per_minute=6, burst=3)  # a token every 10 s
    for _ in range(3):
        take_request(autocommit_conn, ALICE, rate)
    before = _bucket(autocommit_conn, ALICE.principal_arn)
    with pytest.raises(RateLimited) as refused:
        take_request(autocommit_conn, ALICE, rate)
    assert refused.value.retry_after_seconds in (9, 10)
    assert refused.value.limit == 6
    assert refused.value.message == (
        "too many requests: the limit is 6 a minute per caller, 3 at once; "
        f"retry in {refused.value.retry_after_seconds} s"
    )
    after = _bucket(autocommit_conn, ALICE.principal_arn)
    assert before is not None and after is not None
    # refused: no token taken; the refill it saw is stored, which leaves the level as it was
    assert before[0] <= after[0] < 1
    for _ in range(3):  # bob's bucket is his own
        take_request(autocommit_conn, BOB, rate)
    # a principal deriving the same username is another principal, with its own bucket
    take_request(autocommit_conn, IMPOSTOR, rate)


def test_the_bucket_refills_at_its_rate(autocommit_conn: psycopg.Connection[Any]):
    rate = RequestRate(per_minute=600, burst=2)  # a token every 0.1 s
    take_request(autocommit_conn, ALICE, rate)
    take_request(autocommit_conn, ALICE, rate)
    with pytest.raises(RateLimited) as refused:
        take_request(autocommit_conn, ALICE, rate)
    assert refused.value.retry_after_seconds == 1  # whole seconds, at least 1
    time.sleep(0.25)
    take_request(autocommit_conn, ALICE, rate)
    take_request(autocommit_conn, ALICE, rate)
    with pytest.raises(RateLimited):
        take_request(autocommit_conn, ALICE, rate)


def test_a_lowered_burst_caps_a_bucket_filled_under_the_old_one(
    autocommit_conn: psycopg.Connection[Any],
):
    take_request(autocommit_conn, ALICE, RequestRate(per_minute=60, burst=1000))
    lowered = RequestRate(per_minute=1, burst=2)
    take_request(autocommit_conn, ALICE, lowered)
    take_request(autocommit_conn, ALICE, lowered)
    with pytest.raises(RateLimited):
        take_request(autocommit_conn, ALICE, lowered)


def test_concurrent_requests_of_one_principal_take_at_most_the_burst(fresh_database: str):
    rate = RequestRate(per_minute=1, burst=5)
    outcomes: list[str] = []
    start = threading.Barrier(12)

    def one() -> None:
        with psycopg.connect(fresh_database, autocommit=True) as conn:
            start.wait()
            try:
                take_request(conn, ALICE, rate)
                outcomes.append("taken")
            except RateLimited:
                outcomes.append("refused")

    threads = [threading.Thread(target=one) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # The first requests race to create the bucket; every request locks its row, so they
    # are counted one by one (ratelimit/take.sql).
    assert outcomes.count("taken") == 5 and len(outcomes) == 12


def test_a_request_takes_one_statement(autocommit_conn: psycopg.Connection[Any]):
    counting: Any = CountingConnection(autocommit_conn)
    take_request(counting, ALICE, RequestRate(per_minute=60, burst=10))
    assert counting.statements == 1


def test_the_api_role_may_take_a_request(conn: psycopg.Connection[Any]):
    conn.execute("SET LOCAL ROLE gpudev_api")
    take_request(conn, BOB, RequestRate(per_minute=60, burst=10))
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("DELETE FROM api_request_buckets")
