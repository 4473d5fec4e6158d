"""GPU use, written by the availability updater's utilisation step (gpudev/utilisation/)
against real PostgreSQL: samples weighted by the time since the GPU's previous one and
rolled up per hour, the samples table bounded by the same run, and idle reclaim's warning
and ending recorded once, whoever runs again or at the same time."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from gpudev.cluster.vocabulary import Node, Pod
from gpudev.repositories.utilisation import LOCK_KEY
from gpudev.signals import Signals
from gpudev.utilisation.exporter import GpuReading, Scrape
from gpudev.utilisation.service import record_utilisation

T0 = datetime(2026, 11, 27, 8, 0, tzinfo=UTC)
NODE = Node("node-a", "h100", True, False, 8, internal_ip="10.0.0.1")
NO_SIGNALS = Signals(None)  # the rows have no task token: nobody to wake


@pytest.fixture
def rid(autocommit_conn: psycopg.Connection[Any]) -> uuid.UUID:
    autocommit_conn.execute(
        "INSERT INTO users (username, principal_arn) VALUES ('alice', "
        "'arn:aws:iam::123456789012:user/alice')"
    )
    return _reservation(autocommit_conn, timeout_minutes=60)


def _reservation(conn: psycopg.Connection[Any], timeout_minutes: int | None) -> uuid.UUID:
    rid = uuid.uuid4()
    conn.execute(
        """INSERT INTO reservations (reservation_id, user_id, status, gpu_type, gpu_count,
               total_nodes, duration_hours, granted_at, launched_at, expires_at,
               idle_timeout_minutes)
           VALUES (%s, 'alice', 'active', 'h100', 2, 1, 24, %s, %s, %s, %s)""",
        (rid, T0, T0, T0 + timedelta(hours=24), timeout_minutes),
    )
    return rid


def _pod(rid: uuid.UUID) -> Pod:
    return Pod(f"gpu-dev-{str(rid)[:8]}", "node-a", "Running", 2, str(rid), namespace="gpu-dev")


def _scrape(rid: uuid.UUID, *utils: float) -> Scrape:
    pod = _pod(rid)
    readings = [
        GpuReading("node-a", str(i), "gpu-dev", pod.name, util, 1000.0 * (i + 1))
        for i, util in enumerate(utils)
    ]
    return Scrape(readings, frozenset({"node-a"}), frozenset())


def _run(conn: psycopg.Connection[Any], rid: uuid.UUID, at: datetime, *utils: float) -> Any:
    return record_utilisation(conn, [NODE], [_pod(rid)], _scrape(rid, *utils), at, NO_SIGNALS)


def _rows(conn: psycopg.Connection[Any], statement: str, *params: Any) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in conn.execute(statement, params).fetchall()]


def test_samples_roll_up_per_hour_weighted_by_the_time_since_the_previous_one(autocommit_conn, rid):
    _run(autocommit_conn, rid, T0 + timedelta(minutes=1), 90, 0)
    _run(autocommit_conn, rid, T0 + timedelta(minutes=1, seconds=30), 90, 0)
    _run(autocommit_conn, rid, T0 + timedelta(minutes=20), 90, 0)  # a gap: two periods at most

    [(gpu_seconds, busy, util_seconds, peak)] = _rows(
        autocommit_conn,
        "SELECT gpu_seconds, busy_gpu_seconds, util_percent_seconds, peak_memory_mib"
        " FROM gpu_usage_hourly WHERE reservation_id = %s",
        rid,
    )
    per_gpu = 60 + 30 + 120
    assert gpu_seconds == 2 * per_gpu
    assert busy == per_gpu  # GPU 0 only
    assert util_seconds == 90 * per_gpu
    assert peak == 2000


def test_the_same_run_deletes_samples_older_than_two_clock_hours(autocommit_conn, rid):
    _run(autocommit_conn, rid, T0 + timedelta(minutes=1), 50, 50)
    _run(autocommit_conn, rid, T0 + timedelta(hours=1), 50, 50)
    run = _run(autocommit_conn, rid, T0 + timedelta(hours=2, minutes=2), 50, 50)

    assert run.pruned == 2
    kept = _rows(autocommit_conn, "SELECT DISTINCT sampled_at FROM gpu_samples ORDER BY 1")
    assert kept == [(T0 + timedelta(hours=1),), (T0 + timedelta(hours=2, minutes=2),)]
    # the rollups keep everything
    assert len(_rows(autocommit_conn, "SELECT hour FROM gpu_usage_hourly")) == 3


def _idle_events(conn: psycopg.Connection[Any], rid: uuid.UUID) -> list[str]:
    return [
        row[0]
        for row in _rows(
            conn,
            "SELECT detail FROM reservation_events WHERE reservation_id = %s AND kind = 'health'"
            " ORDER BY event_id",
            rid,
        )
    ]


def _idle(conn: psycopg.Connection[Any], rid: uuid.UUID) -> tuple[Any, ...]:
    [row] = _rows(
        conn,
        "SELECT idle_warning IS NOT NULL, idle_ending FROM reservations WHERE reservation_id = %s",
        rid,
    )
    return row


def test_idle_past_its_timeout_is_warned_once_then_ended_once_after_the_grace(autocommit_conn, rid):
    warned_at = T0 + timedelta(minutes=61)
    assert _run(autocommit_conn, rid, warned_at, 0, 1).warned == 1
    assert _run(autocommit_conn, rid, warned_at + timedelta(minutes=1), 0, 0).warned == 0
    assert _idle(autocommit_conn, rid) == (True, None)
    assert len(_idle_events(autocommit_conn, rid)) == 1

    assert _run(autocommit_conn, rid, warned_at + timedelta(minutes=30), 0, 0).ended == 1
    assert _run(autocommit_conn, rid, warned_at + timedelta(minutes=31), 0, 0).ended == 0
    assert _idle(autocommit_conn, rid) == (True, "idle for 1 h")
    events = _idle_events(autocommit_conn, rid)
    assert events[0].startswith("warning: idle: its GPUs have not been used for 1 h")
    assert events[1:] == ["idle: ending it (idle for 1 h)"]


def test_use_after_the_warning_withdraws_it_and_restarts_the_clock(autocommit_conn, rid):
    warned_at = T0 + timedelta(minutes=61)
    _run(autocommit_conn, rid, warned_at, 0, 0)
    _run(autocommit_conn, rid, warned_at + timedelta(minutes=10), 0, 40)
    assert _idle(autocommit_conn, rid) == (False, None)
    assert _idle_events(autocommit_conn, rid)[-1] == (
        "idle: the warning cleared (its GPUs are in use again)"
    )
    later = warned_at + timedelta(minutes=10 + 59)
    assert _run(autocommit_conn, rid, later, 0, 0).warned == 0
    assert _run(autocommit_conn, rid, later + timedelta(minutes=1), 0, 0).warned == 1


def test_a_run_that_overlaps_another_leaves_utilisation_to_it(autocommit_conn, rid, fresh_database):
    with psycopg.connect(fresh_database) as other, other.transaction():
        other.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        run = _run(autocommit_conn, rid, T0 + timedelta(hours=3), 0, 0)
    assert not run.locked
    assert _rows(autocommit_conn, "SELECT count(*) FROM gpu_samples") == [(0,)]
    assert _idle(autocommit_conn, rid) == (False, None)


def test_a_reservation_whose_node_did_not_answer_is_never_judged_idle(autocommit_conn, rid):
    unanswered = Scrape([], frozenset(), frozenset({"node-a"}))
    at = T0 + timedelta(hours=5)
    run = record_utilisation(autocommit_conn, [NODE], [_pod(rid)], unanswered, at, NO_SIGNALS)
    assert run.warned == 0 and run.samples == 0
    [(active_at,)] = _rows(
        autocommit_conn, "SELECT idle_active_at FROM reservations WHERE reservation_id = %s", rid
    )
    assert active_at == at


def test_none_is_sampled_but_never_warned(autocommit_conn, rid):
    never = _reservation(autocommit_conn, timeout_minutes=None)
    run = _run(autocommit_conn, never, T0 + timedelta(hours=10), 0, 0)
    assert run.samples == 2 and run.warned == 0


def test_usage_counts_gpu_hours_used_beside_those_sampled(autocommit_conn, rid):
    from gpudev.repositories import UsageRepository
    from gpudev.utilisation.views import used_gpu_hours

    def used(since: datetime, username: str | None) -> list[Any]:
        until = since + timedelta(hours=1)
        rows = UsageRepository(autocommit_conn).report(since, until, until, username)
        return used_gpu_hours(rows.gpu_seconds_used)

    _run(autocommit_conn, rid, T0 + timedelta(minutes=1), 80, 0)  # 60 s of each GPU
    _run(autocommit_conn, rid, T0 + timedelta(minutes=2), 80, 0)
    [alice] = used(T0, "alice")
    assert (alice.username, alice.gpu_type) == ("alice", "h100")
    assert alice.used_gpu_hours == round(120 / 3600, 4)  # GPU 0, two minutes
    assert alice.sampled_gpu_hours == round(240 / 3600, 4)
    assert alice.mean_util_percent == 40.0
    assert used(T0, "bob") == []
    assert used(T0 + timedelta(hours=1), None) == []


def test_show_and_list_read_the_recent_samples(autocommit_conn, rid):
    from gpudev.identity import caller_from_arn
    from gpudev.utilisation.views import recent_use, reservation_use

    now = datetime.now(UTC)
    _run(autocommit_conn, rid, now - timedelta(minutes=2), 80, 0)
    _run(autocommit_conn, rid, now - timedelta(minutes=1), 40, 0)
    use = reservation_use(autocommit_conn, rid)
    first, second = use.gpus
    assert (first.gpu, first.mean_util_percent, first.peak_util_percent) == ("node-a/0", 60, 80)
    assert [s.util_percent for s in first.samples] == [80, 40]
    assert (second.memory_used_mib, second.peak_memory_used_mib) == (2000, 2000)
    caller = caller_from_arn("arn:aws:iam::123456789012:user/alice")
    [recent] = recent_use(autocommit_conn, caller).reservations
    assert (recent.reservation_id, recent.util_percent, recent.gpus_seen) == (rid, 30.0, 2)


def _plan_then_owner_sets_timeout(
    conn: psycopg.Connection[Any], owner: psycopg.Connection[Any], rid: uuid.UUID, at: datetime
) -> list[Any]:
    """Idle reclaim reads and plans on one connection; between its read and its write the
    owner's `--idle-timeout none` commits on another; then the plan is written."""
    from gpudev.repositories.utilisation import UtilisationRepository, set_idle_timeout
    from gpudev.utilisation.idle import IdleRules, Seen, plan_idle

    repo = UtilisationRepository(conn)
    with conn.transaction():
        candidates = repo.candidates()
        changes = plan_idle(candidates, {rid: Seen.IDLE}, IdleRules(3600, 30, 0), at)
        assert changes, "the plan must decide something for the race to matter"
        assert set_idle_timeout(owner, rid, None) is not None
        return repo.record_idle(changes, candidates)


def test_an_ending_planned_before_the_owner_set_no_timeout_is_not_written(
    autocommit_conn, rid, fresh_database
):
    warned_at = T0 + timedelta(minutes=61)
    _run(autocommit_conn, rid, warned_at, 0, 0)
    assert _idle(autocommit_conn, rid) == (True, None)

    with psycopg.connect(fresh_database, autocommit=True) as owner:
        recorded = _plan_then_owner_sets_timeout(
            autocommit_conn, owner, rid, warned_at + timedelta(minutes=30)
        )

    assert recorded == []
    assert _idle(autocommit_conn, rid) == (False, None)
    assert not any("ending it" in e for e in _idle_events(autocommit_conn, rid))
    # and later runs leave it alone: it has no timeout now
    assert _run(autocommit_conn, rid, warned_at + timedelta(hours=5), 0, 0).ended == 0
    assert _idle(autocommit_conn, rid) == (False, None)


def test_a_warning_planned_before_the_owner_set_no_timeout_is_not_written(
    autocommit_conn, rid, fresh_database
):
    with psycopg.connect(fresh_database, autocommit=True) as owner:
        recorded = _plan_then_owner_sets_timeout(
            autocommit_conn, owner, rid, T0 + timedelta(minutes=61)
        )

    assert recorded == []
    assert _idle(autocommit_conn, rid) == (False, None)
    assert _idle_events(autocommit_conn, rid) == []


def test_a_reservation_of_no_gpus_is_never_a_candidate_and_its_row_never_written(
    autocommit_conn, rid
):
    from gpudev.repositories.utilisation import UtilisationRepository

    cpu = uuid.uuid4()
    autocommit_conn.execute(
        """INSERT INTO reservations (reservation_id, user_id, status, gpu_type, gpu_count,
               total_nodes, duration_hours, granted_at, launched_at, expires_at,
               idle_timeout_minutes)
           VALUES (%s, 'alice', 'active', 'cpu-x86', 0, 1, 24, %s, %s, %s, 60)""",
        (cpu, T0, T0, T0 + timedelta(hours=24)),
    )
    judged = {c.reservation_id for c in UtilisationRepository(autocommit_conn).candidates()}
    assert judged == {rid}
    _run(autocommit_conn, rid, T0 + timedelta(hours=3), 0.0, 0.0)
    assert _rows(
        autocommit_conn,
        "SELECT idle_active_at, idle_warning FROM reservations WHERE reservation_id = %s",
        cpu,
    ) == [(None, None)]
