from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from gpudev.callers import bound_user
from gpudev.db.constraints import domain_errors
from gpudev.errors import (
    DiskNameTaken,
    DuplicateClientRequest,
    InvalidRequest,
    UnknownReference,
)
from gpudev.identity import caller_from_arn
from gpudev.models import ReservationStatus, TimelineEntry, UserLimits
from gpudev.repositories import (
    DisksRepository,
    NewDisk,
    NewReservation,
    ReconcilerRunsRepository,
    ReservationsRepository,
    UsersRepository,
)
from gpudev.repositories.lifecycle import LifecycleRepository

ALICE_ARN = "arn:aws:sts::123456789012:assumed-role/SSOCloudDevGpuReservation/alice"
DANA_ARN = "arn:aws:iam::123456789012:user/dana"
LIMITS = UserLimits(max_live_reservations=100, max_gpus=1000)


def _submit(repo: ReservationsRepository, new: Any) -> Any:
    """A reservation as the API records it (the caller's user row is bound to ALICE_ARN)."""
    submitted = repo.submit(new.user_id, ALICE_ARN, new, LIMITS)
    assert submitted.reservation is not None and submitted.created
    return submitted.reservation


@pytest.fixture
def alice(db: psycopg.Connection[Any]) -> str:
    user = UsersRepository(db).bind_principal("alice", ALICE_ARN)
    assert user is not None
    return user.username


def _new_reservation(user: str, **overrides: Any) -> NewReservation:
    fields: dict[str, Any] = {
        "reservation_id": uuid.uuid4(),
        "user_id": user,
        "gpu_type": "h100",
        "gpu_count": 4,
        "duration_hours": 2.5,
        "name": "training",
        "client_request_id": uuid.uuid4().hex,
    }
    fields.update(overrides)
    return NewReservation(**fields)


def test_users_are_created_once_per_principal(db: psycopg.Connection[Any]):
    users = UsersRepository(db)
    first = users.bind_principal("alice", ALICE_ARN)
    again = users.bind_principal("alice", ALICE_ARN)
    assert first is not None and again is not None
    assert first.username == again.username == "alice"
    assert first.created_at == again.created_at
    assert again.last_seen_at >= first.last_seen_at
    assert first.created_at.tzinfo is not None


def test_another_principal_reads_the_binding_and_writes_nothing(
    db: psycopg.Connection[Any], alice: str
):
    db.execute("UPDATE users SET last_seen_at = now() - interval '1 hour'")
    before = db.execute("SELECT *, ctid FROM users").fetchall()
    other = UsersRepository(db).bind_principal(alice, "arn:aws:iam::123456789012:user/x/alice")
    assert other is not None and other.principal_arn == ALICE_ARN
    assert db.execute("SELECT *, ctid FROM users").fetchall() == before


def test_the_bound_principal_refreshes_last_seen_at_at_most_once_a_minute(
    db: psycopg.Connection[Any], alice: str
):
    users = UsersRepository(db)
    db.execute("UPDATE users SET last_seen_at = now() - interval '1 hour'")
    refreshed = users.bind_principal(alice, ALICE_ARN)
    assert refreshed is not None
    version = db.execute("SELECT ctid::text FROM users").fetchone()  # a new one per update
    again = users.bind_principal(alice, ALICE_ARN)
    assert again == refreshed
    assert db.execute("SELECT ctid::text FROM users").fetchone() == version


def test_a_principal_cannot_be_bound_to_two_usernames(db: psycopg.Connection[Any], alice: str):
    with pytest.raises(psycopg.errors.UniqueViolation, match="users_principal_arn_key"):
        db.execute(
            "INSERT INTO users (username, principal_arn) VALUES ('alice2', %s)", (ALICE_ARN,)
        )


def test_github_usernames_follow_githubs_rules(db: psycopg.Connection[Any], alice: str):
    users = UsersRepository(db)
    updated = users.set_github_username(alice, "octo-cat")
    assert updated is not None and updated.github_username == "octo-cat"
    with pytest.raises(InvalidRequest, match="GitHub"):
        users.set_github_username(alice, "-bad--name")


def test_reservation_round_trips_with_utc_timestamps(db: psycopg.Connection[Any], alice: str):
    repo = ReservationsRepository(db)
    new = _new_reservation(alice, jupyter_enabled=True, disk_name="work")
    created = _submit(repo, new)
    assert created.status is ReservationStatus.PENDING
    assert created.model_dump(include=set(new.model_dump())) == new.model_dump()
    assert created.created_at.utcoffset() == datetime.now(UTC).utcoffset()
    assert repo.get(new.reservation_id) == created
    assert repo.list_for_user(alice) == [created]
    assert repo.list_for_user(alice, [ReservationStatus.ACTIVE]) == []


def test_status_changes_are_recorded_as_events_and_final_ones_stamp_the_end(
    db: psycopg.Connection[Any], alice: str
):
    repo = ReservationsRepository(db)
    created = _submit(repo, _new_reservation(alice))
    repo.set_status(created.reservation_id, ReservationStatus.QUEUED, "waiting for capacity")
    cancelled = repo.set_status(created.reservation_id, ReservationStatus.CANCELLED, "by user")
    assert cancelled is not None
    assert cancelled.reservation_ended is not None and cancelled.cancelled_at is not None
    events = repo.events(created.reservation_id)
    assert [(e.from_status, e.to_status) for e in events] == [
        (None, "pending"),
        ("pending", "queued"),
        ("queued", "cancelled"),
    ]
    assert events[1].detail == "waiting for capacity"


def test_an_extension_records_a_history_entry_with_the_new_expiry(
    db: psycopg.Connection[Any], alice: str
):
    repo = ReservationsRepository(db)
    created = _submit(repo, _new_reservation(alice, duration_hours=2))
    queued = repo.extend(created.reservation_id, 1.5)
    assert queued is not None
    launched = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    db.execute(
        "UPDATE reservations SET status = 'active', launched_at = %s WHERE reservation_id = %s",
        (launched, created.reservation_id),
    )
    assert repo.extend(created.reservation_id, 2, seconds_per_hour=60) is not None
    events = [e for e in repo.events(created.reservation_id) if e.from_status == e.to_status]
    assert {e.kind for e in events} == {"extension"}
    assert [(e.to_status, e.detail) for e in events] == [
        ("pending", "extended by 1.5 h to 3.5 h in total: the hours count from its start"),
        # 5.5 clock hours of 60 s each after launch: 5 min 30 s
        ("active", "extended by 2 h to 5.5 h in total: expires at 2030-01-01 12:05:30 UTC"),
    ]


def test_a_change_that_is_no_extension_writes_no_history(db: psycopg.Connection[Any], alice: str):
    repo = ReservationsRepository(db)
    created = _submit(repo, _new_reservation(alice))
    assert repo.set_jupyter(created.reservation_id, True) is not None
    assert repo.add_user(created.reservation_id, "octocat") is not None
    assert [e.to_status for e in repo.events(created.reservation_id)] == ["pending"]


def test_a_start_up_step_is_written_once_per_change_with_its_timeline_entry(
    db: psycopg.Connection[Any], alice: str
):
    repo = ReservationsRepository(db)
    rows = LifecycleRepository(db)
    created = _submit(repo, _new_reservation(alice))
    rid = created.reservation_id
    assert rows.progress(rid, "pulling image dev:1") is None  # not preparing: nothing
    db.execute("UPDATE reservations SET status = 'preparing' WHERE reservation_id = %s", (rid,))
    steps = [
        "pulling image dev:1",
        "pulling image dev:1",
        "waiting for sshd: pod p",
        "waiting for sshd: pod p",
    ]
    written = [rows.progress(rid, step) for step in steps]
    assert [w is not None for w in written] == [True, False, True, False]
    assert (
        written[2] is not None and written[2].current_detailed_status == "waiting for sshd: pod p"
    )
    startup = [e for e in repo.events(rid) if e.kind == "startup"]
    assert [(e.to_status, e.detail) for e in startup] == [
        ("preparing", "pulling image dev:1"),
        ("preparing", "waiting for sshd: pod p"),
    ]
    tail = TimelineEntry("pod_log", "last 1 log lines of pod p (container c):\nboom", "pod_log")
    rows.record_events(rid, [tail])
    assert repo.events(rid)[-1].kind == "pod_log"
    assert [e.kind for e in repo.events(rid, limit=2, offset=1)] == ["status", "startup"]


def test_a_timeline_entry_recorded_again_under_its_key_is_written_once(
    db: psycopg.Connection[Any], alice: str
):
    # Given a task that records two entries, then runs again (at-least-once delivery)
    rid = _submit(ReservationsRepository(db), _new_reservation(alice)).reservation_id
    rows = LifecycleRepository(db)
    entries = [
        TimelineEntry("scheduling", "pod p scheduled on node n", "scheduled:p"),
        TimelineEntry("image", "image dev:1 pulled for pod p", "pulled:p:dev:1"),
    ]
    rows.record_events(rid, entries)
    rows.record_events(rid, [*entries, TimelineEntry("readiness", "pod p ready", "ready:p")])
    rows.record_events(rid, [])
    # Then each is in the timeline once, in the order first recorded
    recorded = [(e.kind, e.event_key) for e in ReservationsRepository(db).events(rid)[1:]]
    assert recorded == [
        ("scheduling", "scheduled:p"),
        ("image", "pulled:p:dev:1"),
        ("readiness", "ready:p"),
    ]


def test_unknown_gpu_type_is_a_domain_error(db: psycopg.Connection[Any], alice: str):
    with pytest.raises(UnknownReference, match="GPU type"):
        _submit(ReservationsRepository(db), _new_reservation(alice, gpu_type="v100"))


def test_repeated_client_request_id_is_a_domain_error(db: psycopg.Connection[Any], alice: str):
    repo = ReservationsRepository(db)
    first = _submit(repo, _new_reservation(alice, client_request_id="req-1"))
    again = repo.submit(
        alice, ALICE_ARN, _new_reservation(alice, client_request_id="req-1"), LIMITS
    )
    assert again.reservation == first and not again.created
    with pytest.raises(DuplicateClientRequest), db.transaction(), domain_errors():
        db.execute(
            "INSERT INTO reservations (reservation_id, user_id, client_request_id, gpu_type,"
            " gpu_count, duration_hours) VALUES (gen_random_uuid(), %s, 'req-1', 't4', 1, 1)",
            (alice,),
        )
    assert len(repo.list_for_user(alice)) == 1


def test_an_unknown_status_is_refused_by_the_database(db: psycopg.Connection[Any], alice: str):
    repo = ReservationsRepository(db)
    created = _submit(repo, _new_reservation(alice))
    with pytest.raises(InvalidRequest, match="status"), db.transaction(), domain_errors():
        db.execute(
            "UPDATE reservations SET status = 'creating_server' WHERE reservation_id = %s",
            (created.reservation_id,),
        )
    stored = repo.get(created.reservation_id)
    assert stored is not None and stored.status is ReservationStatus.PENDING


def test_disk_round_trip_and_unique_names_per_user(db: psycopg.Connection[Any], alice: str):
    disks = DisksRepository(db)
    created = disks.create(NewDisk(user_id=alice, disk_name="my_disk-1", size_gb=1024))
    assert disks.get(alice, "my_disk-1") == created
    assert disks.list_for_user(alice) == [created]
    with pytest.raises(DiskNameTaken), db.transaction():
        disks.create(NewDisk(user_id=alice, disk_name="my_disk-1"))
    # Another user may use the same name.
    assert disks.create(NewDisk(user_id="bob", disk_name="my_disk-1")).user_id == "bob"


@pytest.mark.parametrize("bad_name", ["", "has space", "a" * 51, "semi;colon", "ünïcode"])
def test_bad_disk_names_are_refused_and_nothing_is_written(
    db: psycopg.Connection[Any], alice: str, bad_name: str
):
    disks = DisksRepository(db)
    with pytest.raises(InvalidRequest, match="disk names"), db.transaction():
        disks.create(NewDisk(user_id=alice, disk_name=bad_name))
    assert disks.list_for_user(alice, include_deleted=True) == []


def test_deleting_a_disk_stamps_when_it_was_marked(db: psycopg.Connection[Any], alice: str):
    DisksRepository(db).create(NewDisk(user_id=alice, disk_name="old"))
    db.execute(
        "UPDATE disks SET is_deleted = true, delete_date = current_date + 30 "
        "WHERE user_id = %s AND disk_name = 'old'",
        (alice,),
    )
    disk = DisksRepository(db).list_for_user(alice, include_deleted=True)[0]
    assert disk.is_deleted and disk.marked_deleted_at is not None
    assert DisksRepository(db).list_for_user(alice) == []


def test_reconciler_runs_store_their_statistics(db: psycopg.Connection[Any]):
    runs = ReconcilerRunsRepository(db)
    run = runs.start("disk_reconciliation", "gpudev-disk-reconciler:req-1")
    stats = {"aws_volumes": 3, "db_records": 2, "created": 1}
    finished = runs.finish(run.run_id, "succeeded", stats)
    assert finished.statistics == stats and finished.finished_at is not None
    assert runs.latest("disk_reconciliation") == finished


def test_a_new_users_concurrent_first_requests_both_get_the_row(fresh_database: str):
    """Two first requests of a new user at once: the second statement waits on the first's
    insert, then finds nothing in its snapshot; `bound_user` reads again instead of
    answering 409 (seen when the local cloud first ran API requests concurrently)."""
    caller = caller_from_arn(DANA_ARN)
    with (
        psycopg.connect(fresh_database) as first,
        psycopg.connect(fresh_database) as second,
        ThreadPoolExecutor(1) as pool,
    ):
        with first.transaction():
            assert UsersRepository(first).bind_principal("dana", DANA_ARN) is not None
            waiting = pool.submit(bound_user, second, caller)
            time.sleep(0.3)
            assert not waiting.done(), "the second insert waits for the first"
        assert waiting.result(timeout=10).username == "dana"
