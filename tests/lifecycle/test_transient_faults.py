"""Transient faults never end an active reservation (issue #12, item 2).

A checkpoint whose faults outlast its retries parks and checks again later; only expiry,
cancel or a permanent fault ends the reservation. An allocator pass run inside a task never
fails that task because another reservation's grant cannot be signalled. Retry waits run on
the compressed clock (at most 1 s each here), so each test takes seconds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql

from tests.lifecycle.helpers import (
    cancel,
    execution_history,
    objects_of,
    reserve,
    show,
    task_token,
    throttled_send_task_success,
    wait_for_status,
)
from tests.support.databases import fetch_value
from tests.support.waiting import wait_for

PARKED_AGAIN = "Checkpoint failed: park, then check again"
CHECKPOINT = "Checkpoint: warnings, changes, expiry"
ATTEMPTS_PER_CHECKPOINT = 9  # the first try and 8 retries


def _control_expiry(cloud: Any, reservation_id: str) -> str:
    (config_map,) = [
        c
        for c in objects_of(cloud, reservation_id)["configmaps"]
        if c["metadata"]["name"].endswith("-control")
    ]
    return str(config_map["data"]["expires_at"])


def test_kubernetes_500s_outlasting_the_checkpoints_retries_leave_it_active_and_applied_later(
    api, local_cloud
):
    rid = reserve(api, gpu_type="cpu-x86", gpu_count=0, hours=2)["reservation_id"]
    wait_for_status(api, rid, "active")
    wait_for(lambda: "Active until the next checkpoint" in execution_history(local_cloud, rid))
    before = _control_expiry(local_cloud, rid)
    failures = ATTEMPTS_PER_CHECKPOINT + 3
    local_cloud.kubernetes.faults.fail_next("replace", "configmaps", failures)

    reply = api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": 1})
    assert reply.status == 202, reply.body

    wait_for(lambda: PARKED_AGAIN in execution_history(local_cloud, rid), timeout=30)
    assert show(api, rid)["status"] == "active"
    assert _control_expiry(local_cloud, rid) == before  # not applied yet
    wait_for(lambda: _control_expiry(local_cloud, rid) != before, timeout=30)
    assert show(api, rid)["status"] == "active"
    history = execution_history(local_cloud, rid)
    assert "Record the failure" not in history and "Tear down" not in history


@contextmanager
def _read_only_writes_to(database_url: str, reservation_id: str, count: int) -> Iterator[str]:
    """The next `count` updates of the reservation's row fail as on an Aurora reader after a
    failover (SQLSTATE 25006, ReadOnlySqlTransaction); yields the fault counter's name. The
    status line's own write after a failed attempt ("waiting for the database", the only
    update that changes the line here) is let through, so the budget counts attempts."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("CREATE SEQUENCE test_fault_budget")
        conn.execute(
            sql.SQL(
                "CREATE FUNCTION test_read_only() RETURNS trigger LANGUAGE plpgsql AS $$"
                " BEGIN"
                "  IF NEW.reservation_id::text = TG_ARGV[0]"
                "     AND NEW.current_detailed_status"
                "         IS NOT DISTINCT FROM OLD.current_detailed_status"
                "     AND nextval('test_fault_budget') <= {count} THEN"
                "   RAISE EXCEPTION 'cannot execute UPDATE in a read-only transaction'"
                "    USING ERRCODE = 'read_only_sql_transaction';"
                "  END IF;"
                "  RETURN NEW;"
                " END $$"
            ).format(count=sql.Literal(count))
        )
        conn.execute(
            sql.SQL(
                "CREATE TRIGGER test_read_only BEFORE UPDATE ON reservations"
                " FOR EACH ROW EXECUTE FUNCTION test_read_only({rid})"
            ).format(rid=sql.Literal(reservation_id))
        )
        try:
            yield "test_fault_budget"
        finally:
            conn.execute("DROP TRIGGER test_read_only ON reservations")
            conn.execute("DROP FUNCTION test_read_only()")
            conn.execute("DROP SEQUENCE test_fault_budget")


def test_a_database_failover_during_a_checkpoint_leaves_the_reservation_active(api, local_cloud):
    rid = reserve(api, gpu_type="cpu-x86", gpu_count=0, hours=2)["reservation_id"]
    wait_for_status(api, rid, "active")
    wait_for(lambda: "Active until the next checkpoint" in execution_history(local_cloud, rid))
    checkpoints = execution_history(local_cloud, rid).count(CHECKPOINT)
    token = task_token(local_cloud, rid)
    failures = ATTEMPTS_PER_CHECKPOINT + 3  # the checkpoint's retries, then the park's first

    with _read_only_writes_to(local_cloud.database_url, rid, failures) as budget:
        sfn = local_cloud.aws.client("stepfunctions")
        sfn.send_task_success(taskToken=token, output=json.dumps({"outcome": "changed"}))

        def spent() -> bool:
            with psycopg.connect(local_cloud.database_url) as conn:
                row = conn.execute(
                    sql.SQL("SELECT last_value FROM {}").format(sql.Identifier(budget))
                ).fetchone()
            return bool(row and row[0] > failures)

        wait_for(spent, timeout=40, message="every injected failure was hit")
        assert PARKED_AGAIN in execution_history(local_cloud, rid)

    # After the fault: the reservation checks again and parks as usual.
    wait_for(
        lambda: execution_history(local_cloud, rid).count(CHECKPOINT) >= checkpoints + 2,
        timeout=20,
    )
    assert show(api, rid)["status"] == "active"
    history = execution_history(local_cloud, rid)
    assert "Record the failure" not in history and "Tear down" not in history


def _parked(cloud: Any, reservation_id: str) -> bool:
    statement = "SELECT task_token IS NOT NULL FROM reservations WHERE reservation_id = %s"
    return bool(fetch_value(cloud.database_url, statement, reservation_id))


def _granted(cloud: Any, reservation_id: str) -> bool:
    statement = "SELECT granted_at IS NOT NULL FROM reservations WHERE reservation_id = %s"
    return bool(fetch_value(cloud.database_url, statement, reservation_id))


def test_a_grant_that_cannot_be_signalled_never_fails_another_reservations_task(api, local_cloud):
    holders = [reserve(api, gpu_type="h100", gpu_count=8)["reservation_id"] for _ in "ab"]
    for holder in holders:
        wait_for_status(api, holder, "active")
    waiting = reserve(api, gpu_type="h100", gpu_count=8)["reservation_id"]
    # Queued rows have a place before their execution parks (migration 0032): the grant
    # below is throttled by token, so wait for the token itself.
    wait_for(lambda: _parked(local_cloud, waiting), message="parked")

    with throttled_send_task_success(task_token(local_cloud, waiting)) as refused:
        cancel(api, holders[0])
        wait_for(lambda: _granted(local_cloud, waiting), timeout=20, message="granted")
        # Passes inside other reservations' tasks meet the throttled grant: a park for
        # capacity (a new reservation) and a tear down (the other holder's cancel).
        other = reserve(api, gpu_type="cpu-x86", gpu_count=0)["reservation_id"]
        wait_for_status(api, other, "active")
        cancel(api, holders[1])
        wait_for_status(api, holders[1], "cancelled")
        wait_for(lambda: execution_history(local_cloud, holders[1])[-1] == "Cancelled")
        assert show(api, waiting)["status"] == "queued" and len(refused) >= 2

    wait_for_status(api, waiting, "active")  # the scheduled pass signals it at last
    assert "Record the failure" not in execution_history(local_cloud, other)
