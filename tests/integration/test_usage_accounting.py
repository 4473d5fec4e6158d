"""Usage accounting against real PostgreSQL (migration 0018's functions through
`UsageRepository`): a hand count of GPU-hours across midnight, a reservation cancelled while
queued (no GPU-hours), a multinode one (every node's GPUs), one still running (counted up
to `as_of`), one granted before the window (clipped); queue waits, outcomes, the fleet's
utilisation from the capacity history; and an operator's force-cancel whose reason lands
in the status history."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import psycopg
import pytest

from gpudev.errors import Conflict, InvalidRequest, NotFound
from gpudev.identity import NotAuthorized, caller_from_arn
from gpudev.models import Availability, ReservationStatus, TypeCapacity
from gpudev.repositories import GpuTypesRepository, LifecycleRepository, UsageRepository
from gpudev.usage.operators import force_cancel
from gpudev.usage.service import usage_report
from tests.support.counting import CountingConnection
from tests.support.submitters import RecordingQueue

ALICE_ARN = "arn:aws:sts::123456789012:assumed-role/GpuDevUsers/alice"
BOB_ARN = "arn:aws:sts::123456789012:assumed-role/GpuDevUsers/bob"
OPERATOR = caller_from_arn("arn:aws:sts::123456789012:assumed-role/GpuDevAdmins/olga")
NOV = datetime(2026, 11, 20, tzinfo=UTC)  # a Friday, 00:00 UTC
SINCE, UNTIL = NOV, NOV + timedelta(days=3)
AS_OF = NOV + timedelta(days=2, hours=12)  # Sunday 12:00: live reservations count to here


def at(day: int, hour: float) -> datetime:
    """Day 0 is 2026-11-20 (UTC)."""
    return NOV + timedelta(days=day, hours=hour)


def _users(conn: psycopg.Connection[Any]) -> None:
    conn.execute(
        "INSERT INTO users (username, principal_arn) VALUES ('alice', %s), ('bob', %s)",
        (ALICE_ARN, BOB_ARN),
    )


def _reservation(
    conn: psycopg.Connection[Any],
    user: str,
    gpu_type: str,
    gpus: int,
    created: datetime,
    granted: datetime | None = None,
    ended: datetime | None = None,
    status: str = "active",
    reason: str | None = None,
    nodes: int = 1,
) -> uuid.UUID:
    rid = uuid.uuid4()
    conn.execute(
        """INSERT INTO reservations (reservation_id, user_id, status, gpu_type, gpu_count,
               total_nodes, duration_hours, created_at, granted_at, launched_at, expires_at,
               reservation_ended, failure_reason, current_detailed_status)
           VALUES (%s, %s, %s, %s, %s, %s, 24, %s, %s, %s, %s, %s, %s, %s)""",
        (
            rid, user, status, gpu_type, gpus, nodes, created, granted,
            granted, granted + timedelta(hours=24) if granted else None, ended,
            (reason or status) if ended else None, reason,
        ),
    )  # fmt: skip
    return rid


def _capacity(conn: psycopg.Connection[Any], steps: list[tuple[str, datetime, int]]) -> None:
    conn.execute("DELETE FROM gpu_capacity_history")
    for gpu_type, moment, total in steps:
        conn.execute(
            "INSERT INTO gpu_capacity_history (gpu_type, at, total_gpus) VALUES (%s, %s, %s)",
            (gpu_type, moment, total),
        )


@pytest.fixture
def recorded(db: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    """Five reservations and a capacity history, written by hand (times in UTC)."""
    _users(db)
    # A: crosses midnight, granted an hour after it was submitted
    _reservation(db, "alice", "h100", 4, at(0, 21), at(0, 22), at(1, 2), "expired")
    # B: cancelled while queued: held nothing
    _reservation(db, "alice", "h100", 8, at(1, 10), None, at(1, 11), "cancelled",
                 "cancelled by the user")  # fmt: skip
    # C: multinode, 2 nodes x 8 GPUs, failed after 1.5 h
    _reservation(db, "bob", "h100", 16, at(1, 6), at(1, 6.5), at(1, 8), "failed", "pod lost",
                 nodes=2)  # fmt: skip
    # D: still running at AS_OF
    _reservation(db, "bob", "t4", 1, at(2, 9), at(2, 9 + 1 / 6))
    # E: granted before the window opened, ended inside it
    _reservation(db, "alice", "h100", 2, at(-1, 23), at(-1, 23.5), at(0, 1), "expired")
    _capacity(
        db,
        [("h100", at(-1, 0), 32), ("h100", at(1, 12), 16), ("t4", at(2, 0), 4)],
    )
    return db


def test_gpu_hours_by_user_type_and_utc_day_match_a_hand_count(recorded: Any):
    rows = UsageRepository(recorded).report(SINCE, UNTIL, AS_OF, None)
    got = {(r.username, r.gpu_type, r.day): round(r.gpu_hours, 6) for r in rows.gpu_hours}
    assert got == {
        # A 22:00-24:00 x 4 = 8, E 00:00-01:00 x 2 (clipped at the window) = 2
        ("alice", "h100", date(2026, 11, 20)): 10.0,
        # A 00:00-02:00 x 4 = 8; B none
        ("alice", "h100", date(2026, 11, 21)): 8.0,
        # C 06:30-08:00 x 16 GPUs on two nodes
        ("bob", "h100", date(2026, 11, 21)): 24.0,
        # D 09:10 to AS_OF 12:00, one GPU
        ("bob", "t4", date(2026, 11, 22)): round(2 + 50 / 60, 6),
    }
    reservations = {(r.username, r.day): r.reservations for r in rows.gpu_hours}
    assert reservations[("alice", date(2026, 11, 20))] == 2


def test_one_users_report_has_only_their_rows_and_no_fleet_figures(recorded: Any):
    rows = UsageRepository(recorded).report(SINCE, UNTIL, AS_OF, "alice")
    assert {r.username for r in rows.gpu_hours} == {"alice"}
    assert sum(r.gpu_hours for r in rows.gpu_hours) == pytest.approx(18.0)
    assert rows.utilisation == []
    (waits,) = rows.queue_waits
    assert (waits.granted, waits.never_granted, waits.max_minutes) == (1, 1, 60.0)


def test_queue_waits_by_type_for_reservations_submitted_in_the_window(recorded: Any):
    rows = UsageRepository(recorded).report(SINCE, UNTIL, AS_OF, None)
    waits = {w.gpu_type: w for w in rows.queue_waits}
    h100 = waits["h100"]  # A waited 60 min, C 30; B never granted; E before the window
    assert (h100.granted, h100.still_waiting, h100.never_granted) == (2, 0, 1)
    assert h100.p50_minutes == pytest.approx(45.0)
    assert h100.p90_minutes == pytest.approx(57.0)
    assert h100.max_minutes == pytest.approx(60.0)
    assert waits["t4"].p50_minutes == pytest.approx(10.0)


def test_outcomes_by_status_and_reason(recorded: Any):
    rows = UsageRepository(recorded).report(SINCE, UNTIL, AS_OF, None)
    got = {(o.outcome, o.reason, o.while_queued): o.reservations for o in rows.outcomes}
    assert got == {
        ("expired", None, False): 2,
        ("cancelled", "cancelled by the user", True): 1,
        ("failed", "pod lost", False): 1,
    }


def test_fleet_utilisation_integrates_the_capacity_history(recorded: Any):
    rows = UsageRepository(recorded).report(SINCE, UNTIL, AS_OF, None)
    fleet = {u.gpu_type: u for u in rows.utilisation}
    # h100: 32 GPUs for 36 h, then 16 for 24 h (to AS_OF); held 10 + 8 + 24
    assert fleet["h100"].capacity_gpu_hours == pytest.approx(32 * 36 + 16 * 24)
    assert fleet["h100"].held_gpu_hours == pytest.approx(42.0)
    assert fleet["h100"].utilisation == pytest.approx(42.0 / 1536)
    assert fleet["t4"].capacity_gpu_hours == pytest.approx(4 * 12)


def test_a_window_inside_one_reservation_counts_only_its_part(recorded: Any):
    rows = UsageRepository(recorded).report(at(0, 23), at(1, 1), AS_OF, None)
    assert [(r.day, r.gpu_hours) for r in rows.gpu_hours] == [
        (date(2026, 11, 20), pytest.approx(4.0)),
        (date(2026, 11, 21), pytest.approx(4.0)),
    ]


def test_days_are_utc_whatever_the_sessions_time_zone(recorded: Any):
    recorded.execute("SET TimeZone = 'America/Los_Angeles'")
    rows = UsageRepository(recorded).report(SINCE, UNTIL, AS_OF, "alice")
    assert {r.day for r in rows.gpu_hours} == {date(2026, 11, 20), date(2026, 11, 21)}


def test_the_report_is_one_round_trip_as_the_api_role(recorded: Any):
    recorded.execute("SET LOCAL ROLE gpudev_api")
    counting = CountingConnection(recorded)
    report = usage_report(
        counting, OPERATOR, SINCE, UNTIL, "type", everyone=True, clock=lambda: AS_OF
    )  # type: ignore[arg-type]
    assert counting.statements == 1
    assert [(t.key, t.gpu_hours) for t in report.totals] == [
        ("h100", pytest.approx(42.0)),
        ("t4", pytest.approx(2 + 50 / 60, abs=1e-4)),
    ]


def test_the_availability_updater_keeps_the_capacity_history(db: psycopg.Connection[Any]):
    def update(h100_total: int, available: int) -> None:
        h100 = dict.fromkeys(TypeCapacity.model_fields, 0) | {
            "gpu_type": "h100",
            "total_cluster_gpus": h100_total,
            "available_gpus": available,
            "max_per_node": 8,
            "groups_found": True,
        }
        GpuTypesRepository(db).update_availability([Availability.model_validate(h100)], "test")

    db.execute("DELETE FROM gpu_capacity_history")
    update(24, 8)
    update(24, 3)  # the total did not change: no new step
    assert db.execute("SELECT gpu_type, total_gpus FROM gpu_capacity_history").fetchall() == [
        ("h100", 24)
    ]
    # the updater's own role writes it (the trigger's function is SECURITY DEFINER)
    db.execute("SET LOCAL ROLE gpudev_reconcilers")
    update(16, 0)  # same transaction, same now(): the step is replaced, not duplicated
    db.execute("RESET ROLE")
    assert db.execute("SELECT total_gpus FROM gpu_capacity_history").fetchall() == [(16,)]


@pytest.fixture
def autocommit(conn: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    conn.autocommit = True
    _users(conn)
    return conn


def test_an_operator_force_cancels_anyones_reservation_and_the_reason_is_in_the_history(
    autocommit: psycopg.Connection[Any],
):
    rid = _reservation(autocommit, "bob", "h100", 8, at(0, 1), at(0, 2))
    queue = RecordingQueue()
    autocommit.execute("SET ROLE gpudev_api")  # the API's grants suffice
    cancelled = force_cancel(autocommit, queue, OPERATOR, str(rid)[:8], "node maintenance")
    autocommit.execute("RESET ROLE")
    assert cancelled.cancel_requested_at is not None
    assert [job.kind for job in queue.sent] == ["cancel_reservation"]
    # the owner's path from here: the execution ends it as any cancel
    LifecycleRepository(autocommit).end(rid, ReservationStatus.CANCELLED, "cancelled by the user")
    history = autocommit.execute(
        "SELECT to_status, detail FROM reservation_events WHERE reservation_id = %s "
        "ORDER BY event_id DESC LIMIT 1",
        (rid,),
    ).fetchone()
    assert history == ("cancelled", "cancelled by operator olga: node maintenance")
    # a repeat changes nothing and queues nothing; an ended one is a conflict
    with pytest.raises(Conflict, match="it is cancelled"):
        force_cancel(autocommit, queue, OPERATOR, str(rid), "again")
    assert len(queue.sent) == 1


def test_an_operator_session_named_after_another_user_cannot_cancel_in_their_name(
    autocommit: psycopg.Connection[Any],
):
    """The operator's name in the record is bound to their principal as users' names are: a
    session of the admin role named `alice` is not alice (403, nothing written or queued)."""
    rid = _reservation(autocommit, "bob", "h100", 8, at(0, 1), at(0, 2))
    posing = caller_from_arn("arn:aws:sts::123456789012:assumed-role/GpuDevAdmins/alice")
    queue = RecordingQueue()
    with pytest.raises(NotAuthorized, match="the username alice belongs to another principal"):
        force_cancel(autocommit, queue, posing, str(rid), "posing as alice")
    assert queue.sent == []
    row = autocommit.execute(
        "SELECT cancel_requested_at, cancel_reason FROM reservations WHERE reservation_id = %s",
        (rid,),
    ).fetchone()
    assert row == (None, None)
    assert autocommit.execute("SELECT count(*) FROM outbox").fetchone() == (0,)
    # the operator's own name is bound to their principal on first sight, like any user's
    force_cancel(autocommit, queue, OPERATOR, str(rid), "maintenance")
    assert autocommit.execute(
        "SELECT principal_arn FROM users WHERE username = 'olga'"
    ).fetchone() == (OPERATOR.principal_arn,)


def test_force_cancel_of_an_unknown_or_short_id_writes_nothing(
    autocommit: psycopg.Connection[Any],
):
    queue = RecordingQueue()
    with pytest.raises(NotFound, match="no reservation"):
        force_cancel(autocommit, queue, OPERATOR, "00000000", "x")
    # malformed ids are refused as the owner's are (one check): too short, LIKE wildcards
    for malformed in ("abc", "%%%%%%%%", "________", "0000000g"):
        with pytest.raises(InvalidRequest, match="is not a reservation id"):
            force_cancel(autocommit, queue, OPERATOR, malformed, "x")
    assert queue.sent == []
    assert autocommit.execute("SELECT count(*) FROM outbox").fetchone() == (0,)
