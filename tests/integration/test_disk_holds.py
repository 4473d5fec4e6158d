"""Who holds a named disk (migrations/0011_disk_holders.sql, repositories/disk_holds.py):
one holder at most, enforced by the database; take and free are single statements; the EBS
reconciler never changes the holder, whatever EBS says."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from gpudev.disks.reconcile import reconcile_disks
from gpudev.models import UserLimits
from gpudev.repositories import (
    DisksRepository,
    NewDisk,
    NewReservation,
    ReservationsRepository,
    UsersRepository,
)
from gpudev.repositories.disk_holds import DiskHoldsRepository
from tests.integration.test_disk_reconciliation import (  # the stubbed EC2 listings
    _expect_snapshots,
    _expect_volume_pages,
    ec2,
    volume,
)

ALICE_ARN = "arn:aws:iam::123456789012:user/alice"
LIMITS = UserLimits(max_live_reservations=100, max_gpus=1000)
__all__ = ["ec2"]


@pytest.fixture
def conn(fresh_database: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(fresh_database, autocommit=True) as connection:
        UsersRepository(connection).bind_principal("alice", ALICE_ARN)
        DisksRepository(connection).create(NewDisk(user_id="alice", disk_name="work"))
        DisksRepository(connection).create(NewDisk(user_id="alice", disk_name="other"))
        yield connection


def _reservation(conn: psycopg.Connection[Any]) -> uuid.UUID:
    new = NewReservation(
        reservation_id=uuid.uuid4(),
        user_id="alice",
        gpu_type="t4",
        gpu_count=1,
        duration_hours=1,
        name="r",
        client_request_id=uuid.uuid4().hex,
        disk_name="work",
    )
    submitted = ReservationsRepository(conn).submit("alice", ALICE_ARN, new, LIMITS)
    assert submitted.reservation is not None
    return submitted.reservation.reservation_id


def test_two_reservations_taking_one_disk_at_once_exactly_one_holds_it(
    conn: psycopg.Connection[Any], fresh_database: str
):
    first, second = _reservation(conn), _reservation(conn)
    results: dict[str, Any] = {}
    with psycopg.connect(fresh_database) as a, psycopg.connect(fresh_database) as b:
        results["first"] = DiskHoldsRepository(a).take(first, "alice", "work")  # not committed

        def take_second() -> None:  # blocks on the row lock until `a` commits
            results["second"] = DiskHoldsRepository(b).take(second, "alice", "work")
            b.commit()

        racer = threading.Thread(target=take_second)
        racer.start()
        racer.join(0.5)
        assert racer.is_alive(), "the second take waits for the first"
        a.commit()
        racer.join(5)
    assert results["first"] is not None and results["first"].reservation_id == first
    assert results["second"] is None
    held = DiskHoldsRepository(conn).named("alice", "work")
    assert held is not None and (held.reservation_id, held.in_use) == (first, True)


def test_a_retried_take_by_the_holder_keeps_it_and_free_is_the_holders_only(
    conn: psycopg.Connection[Any],
):
    holder, other = _reservation(conn), _reservation(conn)
    holds = DiskHoldsRepository(conn)
    assert holds.take(holder, "alice", "work") is not None
    assert holds.take(holder, "alice", "work") is not None  # a retried task
    assert holds.record_listing(other, "x") is None, "only the holder records a listing"
    listed = holds.record_listing(holder, "f 12 notes.txt")
    assert listed is not None and listed.content_listed_at is not None
    assert holds.free(other) is None
    freed = holds.free(holder)
    assert freed is not None and (freed.in_use, freed.reservation_id) == (False, None)
    assert freed.content_listing == "f 12 notes.txt", "the listing outlives the hold"
    assert freed.content_listed_at == listed.content_listed_at
    assert holds.free(holder) is None  # freed already


def test_in_use_is_derived_from_the_holder_and_written_by_nobody(conn: psycopg.Connection[Any]):
    with pytest.raises(psycopg.errors.GeneratedAlways):
        conn.execute("UPDATE disks SET in_use = true")


def test_one_reservation_holds_one_disk_at_most(conn: psycopg.Connection[Any]):
    holder = _reservation(conn)
    assert DiskHoldsRepository(conn).take(holder, "alice", "work") is not None
    with pytest.raises(psycopg.errors.UniqueViolation, match="disks_reservation_id_key"):
        DiskHoldsRepository(conn).take(holder, "alice", "other")


def test_a_deleted_disk_cannot_be_taken(conn: psycopg.Connection[Any]):
    conn.execute("UPDATE disks SET is_deleted = true, delete_date = current_date + 30")
    assert DiskHoldsRepository(conn).take(_reservation(conn), "alice", "work") is None


@pytest.mark.parametrize(
    "listed",
    [
        [],
        [volume("vol-1", "alice", "work", attached=False)],
        [volume("vol-1", "alice", "work", attached=True)],
    ],
    ids=["no volume", "detached volume", "attached volume"],
)
def test_the_reconciler_never_changes_the_holder(
    conn: psycopg.Connection[Any], ec2: Any, listed: list[dict[str, Any]]
):
    client, stubber = ec2
    holder = _reservation(conn)
    holds = DiskHoldsRepository(conn)
    holds.take(holder, "alice", "work")
    holds.record_error(holder, "snapshot failed")
    _expect_volume_pages(stubber, listed)
    _expect_snapshots(stubber, [])
    assert reconcile_disks(conn, client, "test").outcome == "succeeded"
    after = holds.named("alice", "work")
    assert after is not None
    assert (after.reservation_id, after.in_use, after.lifecycle_error) == (
        holder,
        True,
        "snapshot failed",
    )


def test_the_holders_snapshots_are_on_the_disks_figures_as_they_happen_counted_once(
    conn: psycopg.Connection[Any],
):
    from datetime import UTC, datetime, timedelta

    rid = _reservation(conn)
    holds = DiskHoldsRepository(conn)
    holds.take(rid, "alice", "work")
    t1 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)

    started = holds.snapshot_started(rid)
    assert started is not None and started.is_backing_up and started.snapshot_count == 0
    done = holds.snapshot_completed(rid, t1, 2048)
    again = holds.snapshot_completed(rid, t1, 2048)  # a save polled again: counted once
    older = holds.snapshot_completed(rid, t1 - timedelta(hours=1), 2048)  # never backwards

    for disk in (done, again, older):
        assert disk is not None
        assert (disk.snapshot_count, disk.last_snapshot_at, disk.size_gb) == (1, t1, 2048)
        assert disk.is_backing_up is False
    newer = holds.snapshot_completed(rid, t1 + timedelta(hours=2), 2048)
    assert newer is not None and newer.snapshot_count == 2
    assert newer.last_snapshot_at == t1 + timedelta(hours=2)
    holds.snapshot_started(rid)
    dropped = holds.snapshot_dropped(rid)
    assert dropped is not None and dropped.is_backing_up is False and dropped.snapshot_count == 2
    # Only by the holder.
    assert holds.snapshot_completed(uuid.uuid4(), t1 + timedelta(hours=3), 1) is None


def test_the_recorded_volume_is_the_reservations_too_only_while_it_holds_the_disk(
    conn: psycopg.Connection[Any],
):
    rid, other = _reservation(conn), _reservation(conn)
    holds = DiskHoldsRepository(conn)
    holds.take(rid, "alice", "work")

    assert holds.record_volume(other, "vol-other") is None  # not the holder: nothing written
    recorded = holds.record_volume(rid, "vol-1")

    assert recorded is not None and recorded.held_volume_id == "vol-1"
    reservations = ReservationsRepository(conn)
    assert reservations.get(rid).ebs_volume_id == "vol-1"  # type: ignore[union-attr]
    assert reservations.get(other).ebs_volume_id is None  # type: ignore[union-attr]
