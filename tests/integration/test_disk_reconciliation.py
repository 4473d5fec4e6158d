"""The disk reconciler against real PostgreSQL, with EC2 stubbed at the boundary where moto
cannot show the case (pagination, pending snapshots, failures, a slow listing)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from botocore.stub import Stubber

from gpudev.disks.ebs import GPU_DEV_TAG_FILTER
from gpudev.disks.reconcile import reconcile_disks
from gpudev.models import Disk
from gpudev.repositories import DisksRepository, NewDisk, ReconcilerRunsRepository
from tests.support.handlers import Ec2ListingFails, close_handler_pool, lambda_context, load_handler
from tests.support.stubs import stubbed_client

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def volume(vid: str, user: str, disk: str, size: int = 1024, attached: bool = False) -> dict:
    return {
        "VolumeId": vid,
        "Size": size,
        "State": "in-use" if attached else "available",
        "AvailabilityZone": "us-east-2a",
        "Tags": [{"Key": "gpu-dev-user", "Value": user}, {"Key": "disk_name", "Value": disk}],
        "Attachments": [{"State": "attached", "InstanceId": "i-1", "VolumeId": vid}]
        if attached
        else [],
    }


def snapshot(sid: str, user: str, disk: str, state: str) -> dict:
    return {
        "SnapshotId": sid,
        "State": state,
        "StartTime": T0,
        "VolumeSize": 1024,
        "Tags": [{"Key": "gpu-dev-user", "Value": user}, {"Key": "disk_name", "Value": disk}],
    }


@pytest.fixture
def ec2() -> Iterator[tuple[Any, Stubber]]:
    with stubbed_client("ec2") as stubbed:
        yield stubbed


def _expect_volume_pages(stubber: Stubber, *pages: list[dict]) -> None:
    for index, page in enumerate(pages):
        params: dict[str, Any] = {"Filters": GPU_DEV_TAG_FILTER, "MaxResults": 500}
        if index:
            params["NextToken"] = f"page-{index}"
        response: dict[str, Any] = {"Volumes": page}
        if index < len(pages) - 1:
            response["NextToken"] = f"page-{index + 1}"
        stubber.add_response("describe_volumes", response, params)


def _expect_snapshots(stubber: Stubber, snapshots: list[dict]) -> None:
    stubber.add_response(
        "describe_snapshots",
        {"Snapshots": snapshots},
        {"OwnerIds": ["self"], "Filters": GPU_DEV_TAG_FILTER, "MaxResults": 1000},
    )


def _disks(conn: psycopg.Connection[Any]) -> dict[tuple[str, str], Disk]:
    repo = DisksRepository(conn)
    return {
        (d.user_id, d.disk_name): d
        for user in ("alice", "bob")
        for d in repo.list_for_user(user, include_deleted=True)
    }


def test_volumes_across_pages_are_imported_with_pending_snapshots_as_backing_up(conn, ec2):
    client, stubber = ec2
    _expect_volume_pages(
        stubber,
        [volume("vol-1", "alice", "work", attached=True)],
        [volume("vol-2", "bob", "data", size=2048)],
    )
    _expect_snapshots(
        stubber,
        [
            snapshot("snap-1", "alice", "work", "completed"),
            snapshot("snap-2", "alice", "work", "pending"),
        ],
    )
    result = reconcile_disks(conn, client, "test")
    assert result.outcome == "succeeded"
    assert result.statistics == {
        "aws_volumes": 2,
        "db_records": 0,
        "synced": 0,
        "updated": 0,
        "created": 2,
        "errors": 0,
        "orphaned_db_active": 0,
        "orphaned_db_deleted": 0,
    }
    disks = _disks(conn)
    work = disks[("alice", "work")]
    assert (
        work.ebs_volume_id,
        work.in_use,
        work.snapshot_count,
        work.is_backing_up,
        work.last_snapshot_at,
        work.is_deleted,
        work.operation_id,
        work.last_used,
    ) == ("vol-1", False, 1, True, T0, False, None, None)  # held by nobody: migration 0011
    assert disks[("bob", "data")].size_gb == 2048
    stored = ReconcilerRunsRepository(conn).latest("disk_reconciliation")
    assert stored is not None and stored.statistics == result.statistics


def test_a_second_run_over_unchanged_aws_changes_nothing(conn, ec2):
    client, stubber = ec2
    for _ in range(2):
        _expect_volume_pages(stubber, [volume("vol-1", "alice", "work")])
        _expect_snapshots(stubber, [])
    reconcile_disks(conn, client, "first")
    before = _disks(conn)
    result = reconcile_disks(conn, client, "second")
    assert (
        result.statistics["synced"],
        result.statistics["created"],
        result.statistics["updated"],
    ) == (1, 0, 0)
    assert _disks(conn) == before


def test_a_snapshot_listing_failure_keeps_snapshot_fields_but_reconciles_volumes(conn, ec2):
    client, stubber = ec2
    DisksRepository(conn).create(
        NewDisk(user_id="alice", disk_name="work", size_gb=10, ebs_volume_id="vol-1")
    )
    conn.execute("UPDATE disks SET snapshot_count = 4, is_backing_up = true")
    conn.commit()
    _expect_volume_pages(stubber, [volume("vol-1", "alice", "work", size=20)])
    stubber.add_client_error("describe_snapshots", "RequestLimitExceeded", http_status_code=503)
    result = reconcile_disks(conn, client, "test")
    disk = _disks(conn)[("alice", "work")]
    assert result.statistics["updated"] == 1
    assert (disk.size_gb, disk.snapshot_count, disk.is_backing_up) == (20, 4, True)


def test_a_volume_listing_failure_aborts_without_changing_the_database(conn, ec2):
    client, stubber = ec2
    DisksRepository(conn).create(NewDisk(user_id="alice", disk_name="held", ebs_volume_id="v"))
    conn.commit()
    stubber.add_client_error("describe_volumes", "UnauthorizedOperation", http_status_code=403)
    with pytest.raises(Exception, match="UnauthorizedOperation"):
        reconcile_disks(conn, client, "test")
    assert _disks(conn)[("alice", "held")].ebs_volume_id == "v", "not orphaned by a failed listing"
    failed = ReconcilerRunsRepository(conn).latest("disk_reconciliation")
    assert failed is not None and failed.outcome == "failed"
    assert "UnauthorizedOperation" in (failed.error or "")


def test_a_constraint_violation_rolls_back_that_volume_only(conn, ec2):
    client, stubber = ec2
    _expect_volume_pages(
        stubber,
        [
            volume("vol-1", "alice", "good"),
            volume("vol-2", "alice", "not a valid name!"),
            volume("vol-3", "bob", "also-good"),
        ],
    )
    _expect_snapshots(stubber, [])
    result = reconcile_disks(conn, client, "test")
    assert (result.statistics["created"], result.statistics["errors"]) == (2, 1)
    assert set(_disks(conn)) == {("alice", "good"), ("bob", "also-good")}


class _SlowEc2:
    """A boundary fake: lists volumes only when released, to hold a run mid-way."""

    def __init__(self, release: threading.Event, listing: threading.Event):
        self.release, self.listing = release, listing

    def get_paginator(self, operation: str) -> Any:
        fake = self

        class Paginator:
            def paginate(self, **_: Any) -> Iterator[dict[str, Any]]:
                if operation == "describe_volumes":
                    fake.listing.set()
                    fake.release.wait(10)
                    yield {"Volumes": [volume("vol-1", "alice", "work")]}
                else:
                    yield {"Snapshots": []}

        return Paginator()


def test_a_second_concurrent_run_skips_at_once(fresh_database: str):
    release, listing = threading.Event(), threading.Event()
    results: list[Any] = []

    def first_run() -> None:
        with psycopg.connect(fresh_database) as conn:
            results.append(reconcile_disks(conn, _SlowEc2(release, listing), "first"))

    thread = threading.Thread(target=first_run)
    thread.start()
    assert listing.wait(10)
    with psycopg.connect(fresh_database) as conn:
        second = reconcile_disks(conn, _SlowEc2(threading.Event(), threading.Event()), "second")
    release.set()
    thread.join()
    assert second.outcome == "skipped"
    assert results[0].outcome == "succeeded" and results[0].statistics["created"] == 1
    with psycopg.connect(fresh_database) as conn:
        assert len(_disks(conn)) == 1
        outcomes = [
            r[0] for r in conn.execute("SELECT outcome FROM reconciler_runs ORDER BY run_id")
        ]
    assert sorted(outcomes) == ["skipped", "succeeded"]


def test_the_handler_commits_a_run_and_records_a_failed_one_that_survives_the_failure(
    fresh_database: str, monkeypatch: pytest.MonkeyPatch
):
    """The function runs on an autocommit connection, as the purge and the sweeper: the
    run's own transactions commit, and a `failed` run outlives the error it reports."""
    from types import SimpleNamespace

    module = load_handler("disk_reconciler", fresh_database, monkeypatch)
    try:
        with stubbed_client("ec2") as (client, stubber):
            _expect_volume_pages(stubber, [volume("vol-1", "alice", "work")])
            _expect_snapshots(stubber, [])
            monkeypatch.setattr(module, "aws_clients", lambda: SimpleNamespace(ec2=client))
            done = module.handler({}, lambda_context("gpudev-disk-reconciler"))
        monkeypatch.setattr(module, "aws_clients", lambda: SimpleNamespace(ec2=Ec2ListingFails()))
        with pytest.raises(Exception, match="InternalError"):
            module.handler({}, lambda_context("gpudev-disk-reconciler"))
    finally:
        close_handler_pool()

    assert done["outcome"] == "succeeded" and done["statistics"]["created"] == 1
    with psycopg.connect(fresh_database) as conn:
        assert ("alice", "work") in _disks(conn)
        failed = ReconcilerRunsRepository(conn).latest("disk_reconciliation")
    assert failed is not None and failed.outcome == "failed"
    assert "InternalError" in (failed.error or "")


def test_a_sync_planned_before_the_lifecycle_recorded_a_snapshot_moves_no_figure_back(conn):
    """The reconciler read the row and AWS (no completed snapshot yet), then the lifecycle
    recorded the save's completed snapshot, then the reconciler writes its plan: the row
    keeps the newer figures."""
    from gpudev.repositories.disk_reconciliation import (
        DiskReconciliationRepository,
        DiskState,
        SyncDisk,
    )

    saved_at = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
    conn.execute(
        "INSERT INTO users (username, principal_arn)"
        " VALUES ('figures', 'arn:aws:iam::123456789012:user/figures')"
    )
    (disk_id,) = conn.execute(
        "INSERT INTO disks (user_id, disk_name, ebs_volume_id, size_gb, snapshot_count,"
        " last_snapshot_at) VALUES ('figures', 'work', 'vol-1', 100, 1, %s) RETURNING disk_id",
        (saved_at,),
    ).fetchone()
    planned = DiskState(
        ebs_volume_id="vol-1",
        size_gb=100,
        snapshot_count=0,
        is_backing_up=False,
        last_snapshot_at=None,
    )
    DiskReconciliationRepository(conn).sync([SyncDisk(disk_id, planned)])
    row = conn.execute(
        "SELECT snapshot_count, last_snapshot_at FROM disks WHERE disk_id = %s", (disk_id,)
    ).fetchone()
    assert row == (1, saved_at)
