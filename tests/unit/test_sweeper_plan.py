"""The sweeper's decisions (gpudev/sweeper/plan.py), without I/O."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import pytest

from cdk_app.declaration import METRICS_NAMESPACE
from gpudev.models import ReservationStatus as S
from gpudev.observability import metrics
from gpudev.repositories.sweeper import HeldDisk, LiveRow
from gpudev.sweeper.plan import (
    EXECUTION_MISSING,
    ClusterObject,
    Limits,
    disks_to_save,
    executions_to_describe,
    held_executions_to_describe,
    plan_sweep,
)

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
LIMITS = Limits(pending_after_seconds=300, max_create_resends=3)


def row(
    status: S = S.ACTIVE,
    execution: bool = True,
    age_seconds: float = 3600,
    resends: int = 0,
    resent_seconds_ago: float | None = None,
    cancel: bool = False,
) -> LiveRow:
    rid = uuid4()
    return LiveRow(
        reservation_id=rid,
        user_id="alice",
        status=status,
        execution_arn=f"arn:aws:states:us-east-2:1:execution:gpudev-reservation:{rid}"
        if execution
        else None,
        created_at=NOW - timedelta(seconds=age_seconds),
        cancel_requested_at=NOW if cancel else None,
        create_job_resends=resends,
        create_job_resent_at=None
        if resent_seconds_ago is None
        else NOW - timedelta(seconds=resent_seconds_ago),
        read_at=NOW,
    )


def objects_of(rid: UUID | str, terminating: bool = False) -> list[ClusterObject]:
    short = str(rid)[:8]
    return [
        ClusterObject("pods", f"gpu-dev-{short}", str(rid), terminating),
        ClusterObject("services", f"gpu-dev-{short}-ssh", str(rid)),
        ClusterObject("configmaps", f"gpu-dev-{short}-control", str(rid)),
        ClusterObject("secrets", f"gpu-dev-{short}-keys", str(rid)),
    ]


def test_only_live_rows_missing_from_the_running_list_are_described():
    running, stopped, pending = row(), row(S.PREPARING), row(S.PENDING, execution=False)
    queued = row(S.QUEUED)
    arns = executions_to_describe(
        [running, stopped, pending, queued], {running.execution_arn or ""}
    )
    assert arns == sorted([stopped.execution_arn, queued.execution_arn])


@pytest.mark.parametrize("status", ["SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"])
@pytest.mark.parametrize("row_status", [S.QUEUED, S.PREPARING, S.ACTIVE])
def test_a_live_row_whose_execution_ended_is_ended_failed_with_the_reason(status, row_status):
    dead = row(row_status)
    plan = plan_sweep(
        [dead], {dead.execution_arn: status}, objects_of(dead.reservation_id), LIMITS, listed_at=NOW
    )
    (end,) = plan.ends
    assert end.reservation_id == dead.reservation_id and end.status == S.FAILED
    assert end.execution_arn == dead.execution_arn
    assert end.reason == (
        f"its execution ended ({status}) without tearing down; cleaned up by the sweeper"
    )
    assert {(d.kind, d.reservation_id) for d in plan.deletes} == {
        (kind, str(dead.reservation_id)) for kind in ("pods", "services", "configmaps", "secrets")
    }
    assert plan.resends == []


def test_an_execution_that_no_longer_exists_counts_as_ended():
    lost = row()
    (end,) = plan_sweep(
        [lost], {lost.execution_arn: EXECUTION_MISSING}, [], LIMITS, listed_at=NOW
    ).ends
    assert "(not found)" in end.reason


@pytest.mark.parametrize("status", ["RUNNING", "PENDING_REDRIVE"])
def test_a_running_execution_and_its_objects_are_left_alone(status):
    alive = row()
    plan = plan_sweep(
        [alive],
        {alive.execution_arn: status},
        objects_of(alive.reservation_id),
        LIMITS,
        listed_at=NOW,
    )
    assert plan.ends == [] and plan.deletes == [] and plan.resends == []


def test_a_live_row_not_described_is_left_alone():
    """Not described: it was in the running list."""
    alive = row()
    plan = plan_sweep([alive], {}, objects_of(alive.reservation_id), LIMITS, listed_at=NOW)
    assert plan.ends == [] and plan.deletes == []


def test_objects_of_a_long_ended_or_unknown_reservation_are_deleted_except_terminating_ones():
    alive = row()
    ended, unknown = uuid4(), uuid4()
    objects = (
        objects_of(alive.reservation_id)
        + objects_of(ended, terminating=True)
        + objects_of(unknown)
        + objects_of("not-a-uuid")
    )
    plan = plan_sweep(
        [alive],
        {},
        objects,
        LIMITS,
        listed_at=NOW,
        ended_at={str(ended): NOW - timedelta(hours=1)},
    )
    deleted = {(d.kind, d.name) for d in plan.deletes}
    assert ("pods", f"gpu-dev-{str(ended)[:8]}") not in deleted, "already being deleted"
    assert {d.reservation_id for d in plan.deletes} == {str(ended), str(unknown), "not-a-uuid"}
    assert len(plan.deletes) == 3 + 4 + 4
    assert plan.ends == []


@pytest.mark.parametrize(
    ("ended_seconds_before_listing", "deleted"),
    [
        (-5, False),  # ended after the listing began: its tear down ran while we looked
        (0, False),
        (LIMITS.ended_margin_seconds - 1, False),  # inside the margin: tear down may finish
        (LIMITS.ended_margin_seconds, True),
        (3600, True),
    ],
)
def test_objects_of_a_reservation_are_leftovers_only_once_it_ended_the_margin_before_the_listing(
    ended_seconds_before_listing, deleted
):
    ended = uuid4()
    plan = plan_sweep(
        [],
        {},
        objects_of(ended),
        LIMITS,
        listed_at=NOW,
        ended_at={str(ended): NOW - timedelta(seconds=ended_seconds_before_listing)},
    )
    assert len(plan.deletes) == (4 if deleted else 0)


def test_objects_of_a_reservation_the_sweep_ends_itself_are_deleted_at_once():
    """Its end is this run's repair, not a tear down's: no margin to wait for."""
    dead = row()
    plan = plan_sweep(
        [dead],
        {dead.execution_arn: "ABORTED"},
        objects_of(dead.reservation_id),
        LIMITS,
        listed_at=NOW,
        ended_at={},
    )
    assert len(plan.ends) == 1 and len(plan.deletes) == 4


def test_a_delete_carries_the_object_as_listed_for_its_preconditions():
    unknown = uuid4()
    item = {
        "metadata": {
            "name": "gpu-dev-x",
            "namespace": "gpu-dev-profiling",
            "uid": "u-1",
            "resourceVersion": "42",
            "labels": {"gpu-dev/reservation": str(unknown)},
        }
    }
    listed = ClusterObject.from_item("pods", item, "gpu-dev/reservation")
    (delete,) = plan_sweep([], {}, [listed], LIMITS, listed_at=NOW).deletes
    assert (delete.namespace, delete.uid, delete.resource_version) == (
        "gpu-dev-profiling",
        "u-1",
        "42",
    )


def test_a_young_pending_row_is_left_to_the_consumer():
    young = row(S.PENDING, execution=False, age_seconds=299)
    assert plan_sweep([young], {}, [], LIMITS, listed_at=NOW).resends == []


def test_a_pending_row_without_an_execution_after_the_limit_gets_its_job_again():
    stuck = row(S.PENDING, execution=False, age_seconds=300)
    plan = plan_sweep([stuck], {}, [], LIMITS, listed_at=NOW)
    assert [(r.reservation_id, r.user_id) for r in plan.resends] == [
        (stuck.reservation_id, "alice")
    ]
    assert plan.ends == []


def test_resends_are_spaced_by_the_same_interval():
    just_resent = row(S.PENDING, execution=False, age_seconds=900, resends=1, resent_seconds_ago=10)
    due = row(S.PENDING, execution=False, age_seconds=900, resends=1, resent_seconds_ago=301)
    plan = plan_sweep([just_resent, due], {}, [], LIMITS, listed_at=NOW)
    assert [r.reservation_id for r in plan.resends] == [due.reservation_id]


def test_a_pending_row_ends_failed_after_the_last_resend():
    tried = row(S.PENDING, execution=False, age_seconds=3600, resends=3, resent_seconds_ago=400)
    plan = plan_sweep([tried], {}, [], LIMITS, listed_at=NOW)
    (end,) = plan.ends
    assert plan.resends == []
    assert end.status == S.FAILED and end.execution_arn is None
    assert "sent 4 times" in end.reason and "sweeper" in end.reason


def test_a_stuck_pending_row_whose_owner_cancelled_ends_cancelled_without_a_resend():
    cancelled = row(S.PENDING, execution=False, age_seconds=600, cancel=True)
    (end,) = plan_sweep([cancelled], {}, [], LIMITS, listed_at=NOW).ends
    assert end.status == S.CANCELLED


def test_a_pending_row_with_an_execution_is_the_executions_business():
    started = row(S.PENDING, execution=True, age_seconds=3600)
    plan = plan_sweep([started], {}, [], LIMITS, listed_at=NOW)
    assert plan.ends == [] and plan.resends == []


def test_the_alarms_namespace_is_the_one_metrics_are_emitted_under():
    assert metrics.namespace == METRICS_NAMESPACE


def held(execution: str | None = "set") -> HeldDisk:
    rid = uuid4()
    arn = f"arn:aws:states:us-east-2:1:execution:gpudev-reservation:{rid}"
    return HeldDisk(rid, arn if execution else None)


def test_a_held_disk_is_saved_only_when_its_execution_is_confirmed_not_alive():
    running, aborted, failed, missing, undescribed, redriving = (held() for _ in range(6))
    none = held(None)
    every = [running, aborted, failed, missing, undescribed, redriving, none]
    listed = {str(running.execution_arn)}
    described = {
        str(aborted.execution_arn): "ABORTED",
        str(failed.execution_arn): "FAILED",
        str(missing.execution_arn): EXECUTION_MISSING,
        str(redriving.execution_arn): "PENDING_REDRIVE",
    }
    assert held_executions_to_describe(every, listed, described) == [undescribed.execution_arn], (
        "only what neither the list nor this run's describes showed"
    )
    assert sorted(disks_to_save(every, listed, described)) == sorted(
        [aborted.reservation_id, failed.reservation_id, missing.reservation_id, none.reservation_id]
    )


# -- requests whose jobs were never delivered (dead-lettered) --------------------------------


def parked(status: S = S.ACTIVE, **fields: object) -> LiveRow:
    return replace(row(status), task_token="token", **fields)  # type: ignore[arg-type]


def test_a_cancel_unheard_for_longer_than_the_limit_wakes_its_parked_execution():
    limits = Limits(300, 3, requested_after_seconds=120)
    old = parked(cancel_requested_at=NOW - timedelta(seconds=121))
    queued = parked(S.QUEUED, cancel_requested_at=NOW - timedelta(seconds=600))
    fresh = parked(cancel_requested_at=NOW - timedelta(seconds=30))
    between_steps = replace_token(parked(cancel_requested_at=NOW - timedelta(hours=1)), None)

    plan = plan_sweep([old, queued, fresh, between_steps], {}, [], limits, listed_at=NOW)

    assert {(w.reservation_id, w.outcome) for w in plan.wakes} == {
        (old.reservation_id, "cancel"),
        (queued.reservation_id, "cancel"),
    }
    assert not plan.ends, "the execution tears down itself: it saves the disk too"


def replace_token(live: LiveRow, token: str | None) -> LiveRow:
    return replace(live, task_token=token)


def test_a_change_not_applied_wakes_only_outside_the_change_wake_bound():
    limits = Limits(300, 3, change_wake_bound_seconds=180)
    never_woken = parked(change_generation=2, applied_generation=1)
    woken_long_ago = parked(change_generation=1, change_woken_seconds=181.0)
    within_bound = parked(change_generation=1, change_woken_seconds=60.0)
    applied = parked(change_generation=3, applied_generation=3)
    not_active = parked(S.PREPARING, change_generation=1)

    plan = plan_sweep(
        [never_woken, woken_long_ago, within_bound, applied, not_active],
        {},
        [],
        limits,
        listed_at=NOW,
    )

    assert {(w.reservation_id, w.outcome) for w in plan.wakes} == {
        (never_woken.reservation_id, "changed"),
        (woken_long_ago.reservation_id, "changed"),
    }


def test_a_request_on_a_row_whose_execution_died_is_ended_not_woken():
    dead = parked(cancel_requested_at=NOW - timedelta(hours=1))
    plan = plan_sweep([dead], {dead.execution_arn or "": "ABORTED"}, [], LIMITS, listed_at=NOW)
    assert not plan.wakes and [end.reservation_id for end in plan.ends] == [dead.reservation_id]


def test_the_wake_keeps_its_token_out_of_logs_and_reprs():
    limits = Limits(300, 3, requested_after_seconds=0)
    plan = plan_sweep([parked(cancel_requested_at=NOW)], {}, [], limits, listed_at=NOW)
    assert "'token'" not in repr(plan.wakes[0])
