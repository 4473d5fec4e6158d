"""Named disks, snapshot-first (lifecycle/disk.py): a granted reservation gets a volume in
its node's zone from the disk's latest completed snapshot, mounted at /home/dev through a
PersistentVolume and a claim; every ending snapshots it, waits for the snapshot, deletes
the volume and frees the disk. Exactly one reservation holds a disk; the EBS disk
reconciler, run at every step, changes nothing the lifecycle owns."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from gpudev.cluster.home_listing import LISTING_MARKER
from gpudev.cluster.vocabulary import STARTUP_FAILED
from localcloud.kubernetes.container_restarts import Crash
from tests.lifecycle.conftest import DEV_IMAGE
from tests.lifecycle.helpers import (
    assert_nothing_left,
    cancel,
    execution_arn,
    execution_history,
    objects_of,
    reserve,
    show,
    stop_execution,
    sweep,
    wait_for_status,
)
from tests.support.waiting import wait_for

OWNED = (
    "SELECT reservation_id, in_use, last_used, content_listing, content_listed_at,"
    " lifecycle_error"
    " FROM disks WHERE disk_name = %s"
)


@pytest.fixture
def disk(local_cloud: Any) -> str:
    name = f"work-{uuid.uuid4().hex[:6]}"
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn) VALUES"
            " ('alice', 'arn:aws:iam::123456789012:user/alice') ON CONFLICT DO NOTHING"
        )
        conn.execute("INSERT INTO disks (user_id, disk_name) VALUES ('alice', %s)", (name,))
    return name


def _row(cloud: Any, name: str) -> dict[str, Any]:
    with psycopg.connect(cloud.database_url) as conn, conn.cursor() as cur:
        cur.execute(OWNED, (name,))
        row = cur.fetchone()
        assert row is not None and cur.description is not None
        return {c.name: v for c, v in zip(cur.description, row, strict=True)}


def _ec2(cloud: Any) -> Any:
    return cloud.aws.client("ec2")


def _volumes(cloud: Any, rid: str) -> list[dict[str, Any]]:
    return _ec2(cloud).describe_volumes(Filters=[{"Name": "tag:reservation-id", "Values": [rid]}])[
        "Volumes"
    ]


def _snapshots(cloud: Any, name: str) -> list[dict[str, Any]]:
    return _ec2(cloud).describe_snapshots(
        OwnerIds=["self"], Filters=[{"Name": "tag:disk_name", "Values": [name]}]
    )["Snapshots"]


def _node_zone(cloud: Any, rid: str) -> str:
    (pod,) = [p for p in objects_of(cloud, rid)["pods"] if p["metadata"]["name"].endswith(rid[:8])]
    node = cloud.kubernetes.store.get("nodes", None, pod["spec"]["nodeName"])
    return str(node["metadata"]["labels"]["topology.kubernetes.io/zone"])


def _free(cloud: Any, name: str) -> dict[str, Any]:
    return wait_for(
        lambda: (row := _row(cloud, name))["reservation_id"] is None and row,
        timeout=30,
        message=f"disk {name} freed",
    )


def test_write_then_remount_restores_the_first_reservations_snapshot_in_the_nodes_zone(
    api, local_cloud, disk
):
    first = reserve(api, disk_name=disk)["reservation_id"]
    wait_for_status(api, first, "active")
    (volume,) = _volumes(local_cloud, first)
    assert volume["AvailabilityZone"] == _node_zone(local_cloud, first)
    assert volume["VolumeType"] == "gp3" and volume["Size"] == 1024
    assert "SnapshotId" not in volume or not volume["SnapshotId"], "first use: empty"
    claims = objects_of(local_cloud, first)["persistentvolumeclaims"]
    homes = [c for c in claims if c["metadata"]["name"].endswith("-home")]  # and the share's
    assert [c["spec"]["volumeName"] for c in homes] == [f"gpu-dev-{first}-home"]
    pv = local_cloud.kubernetes.store.get("persistentvolumes", None, f"gpu-dev-{first}-home")
    assert pv["spec"]["csi"] == {
        "driver": "ebs.csi.aws.com",
        "volumeHandle": volume["VolumeId"],
        "fsType": "ext4",
    }
    (pod,) = objects_of(local_cloud, first)["pods"]
    mounts = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert mounts["dev-home"]["persistentVolumeClaim"]["claimName"] == homes[0]["metadata"]["name"]
    active = _reconcile_and_compare(local_cloud, disk)  # active: the volume attached
    assert active["reservation_id"] == uuid.UUID(first)
    # what the stand-in's kubelet "finds" on the volume when the preStop hook lists it
    local_cloud.cluster.storage.contents[volume["VolumeId"]] = LISTING_MARKER + "f 12 train.py\n"

    cancel(api, first)
    wait_for_status(api, first, "cancelled")
    freed = _free(local_cloud, disk)
    assert freed["content_listing"] == "f 12 train.py\n" and freed["content_listed_at"]
    content = api.call("GET", f"/v1/disks/{disk}/content", profile="alice").body
    assert content["content_listing"] == "f 12 train.py\n" and content["content_listed_at"]
    (saved,) = _snapshots(local_cloud, disk)
    assert saved["State"] == "completed" and saved["VolumeId"] == volume["VolumeId"]
    assert _volumes(local_cloud, first) == [], "deleted once its snapshot completed"
    assert_nothing_left(local_cloud, first)
    # The disk's steps in the timeline, each once, in order: made, available, attached to
    # the pod, then after the ending the snapshot that saved it.
    timeline = api.call("GET", f"/v1/reservations/{first}/events").body["events"]
    said = [e["detail"] for e in timeline if e["kind"] == "disk"]
    vid, sid = volume["VolumeId"], saved["SnapshotId"]
    assert said[:2] == [
        f"disk {disk}: volume {vid} being made in {volume['AvailabilityZone']} (empty)",
        f"disk {disk}: volume {vid} available",
    ], said
    attach = [d for d in said if "to pod" in d]
    assert attach and attach[-1].startswith(f"disk {disk} attached to pod "), said
    assert said[-2:] == [
        f"disk {disk}: snapshot {sid} of volume {vid} started (saving the disk)",
        f"disk {disk}: snapshot {sid} completed",
    ], said
    assert len(said) == len(set(said))

    second = reserve(api, disk_name=disk)["reservation_id"]
    wait_for_status(api, second, "active")
    (again,) = _volumes(local_cloud, second)
    assert again["SnapshotId"] == saved["SnapshotId"]
    assert again["AvailabilityZone"] == _node_zone(local_cloud, second)


def test_a_pod_that_cannot_initialize_fails_at_once_leaving_nothing_but_the_saved_disk(
    api, local_cloud, disk
):
    """Node 0's Jupyter check cannot start (the image has no shell): the kubelet restarts it
    and it fails again (Init:CrashLoopBackOff). The readiness check ends the reservation
    with the container's own words (`did not start`, not the ready timeout's `not ready in
    time`); nothing is left, the allocation is released, the disk saved and free."""
    local_cloud.cluster.kubelet.shell_less_images = frozenset({DEV_IMAGE})
    try:
        rid = reserve(api, disk_name=disk)["reservation_id"]
        failed = wait_for_status(api, rid, "failed", timeout=30)
    finally:
        local_cloud.cluster.kubelet.shell_less_images = frozenset()
    reason = failed["failure_reason"]
    assert reason.startswith(
        "the pod did not start: init container jupyter-check keeps failing (CrashLoopBackOff, "
    ), reason
    assert 'exec: "/bin/bash": stat /bin/bash: no such file or directory' in reason
    row = _free(local_cloud, disk)  # its claim goes with the pod (pvc-protection)
    assert not row["in_use"] and row["lifecycle_error"] is None
    assert_nothing_left(local_cloud, rid)
    assert _volumes(local_cloud, rid) == []
    assert [s["State"] for s in _snapshots(local_cloud, disk)] == ["completed"]


def test_a_dev_container_that_crash_loops_fails_at_once_leaving_nothing_but_the_saved_disk(
    api, local_cloud, disk
):
    """The dev container's startup cannot go on (an image with no sshd and no apt-get: it
    exits 1 with startup.sh's words in its termination message); the kubelet restarts it
    and it crashes again (CrashLoopBackOff). The readiness check ends the reservation with
    those words at once (not the ready timeout's `not ready in time`); nothing is left, the
    allocation is released, the disk saved and free, its listing not the crash's message."""
    said = f"{STARTUP_FAILED}no sshd in this image, and apt-get could not install openssh-server"
    local_cloud.cluster.kubelet.crashing_images = {DEV_IMAGE: Crash(1, message=said + "\n")}
    try:
        rid = reserve(api, disk_name=disk)["reservation_id"]
        failed = wait_for_status(api, rid, "failed", timeout=30)
    finally:
        local_cloud.cluster.kubelet.crashing_images = {}
    reason = failed["failure_reason"]
    assert reason.startswith(
        "the pod did not start: container gpu-dev keeps crashing (CrashLoopBackOff, restarted "
    ), reason
    assert reason.endswith(f"; last exit 1: {said})"), reason
    row = _free(local_cloud, disk)  # its claim goes with the pod (pvc-protection)
    assert not row["in_use"] and row["lifecycle_error"] is None
    assert row["content_listing"] is None  # the crash's message is no listing
    assert_nothing_left(local_cloud, rid)
    assert _volumes(local_cloud, rid) == []
    assert [s["State"] for s in _snapshots(local_cloud, disk)] == ["completed"]


def test_cancel_while_provisioning_with_a_disk_leaks_nothing(api, local_cloud, disk):
    local_cloud.cluster.kubelet.image_pulls_fail = True
    rid = reserve(api, disk_name=disk)["reservation_id"]
    wait_for_status(api, rid, "preparing")
    wait_for(lambda: objects_of(local_cloud, rid)["persistentvolumeclaims"], message="claim")
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    _free(local_cloud, disk)
    assert _volumes(local_cloud, rid) == []
    assert_nothing_left(local_cloud, rid)
    assert (
        local_cloud.kubernetes.store.list("persistentvolumes", None, f"gpu-dev/reservation={rid}")[
            "items"
        ]
        == []
    )


def test_two_reservations_racing_for_one_disk_exactly_one_gets_it(api, local_cloud, disk):
    rids = [reserve(api, disk_name=disk)["reservation_id"] for _ in range(2)]
    ended = {rid: wait_for_status(api, rid, ("active", "failed"), timeout=30) for rid in rids}
    winners = [rid for rid, r in ended.items() if r["status"] == "active"]
    (winner,) = winners
    (loser,) = [rid for rid in rids if rid != winner]
    assert f"in use by reservation {winner}" in ended[loser]["current_detailed_status"]
    assert _volumes(local_cloud, loser) == [] and not objects_of(local_cloud, loser)["pods"]
    refused = api.call(
        "POST",
        "/v1/reservations",
        profile="alice",
        body={
            "gpu_type": "t4",
            "gpu_count": 1,
            "hours": 1,
            "disk_name": disk,
            "github_user": "bob",
        },
    )
    assert refused.status == 409 and winner[:8] in str(refused.body)


@pytest.fixture
def failing_snapshots() -> Iterator[Callable[[bool], None]]:
    """Snapshots made while set fail (state `error`), as EBS reports a failed snapshot:
    moto's snapshots never fail, so the boundary is stubbed in its backend."""
    from moto.ec2.models.elastic_block_store import EBSBackend

    original = EBSBackend.create_snapshot
    failing = {"on": False}

    def create_snapshot(self: Any, *args: Any, **kwargs: Any) -> Any:
        snapshot = original(self, *args, **kwargs)
        if failing["on"]:
            snapshot.__dict__["status"] = "error"
        return snapshot

    EBSBackend.create_snapshot = create_snapshot  # type: ignore[method-assign]
    yield lambda on: failing.update(on=on)
    EBSBackend.create_snapshot = original  # type: ignore[method-assign]


def test_a_failed_snapshot_keeps_the_volume_and_the_hold_shows_why_and_is_retried(
    api, local_cloud, disk, failing_snapshots
):
    rid = reserve(api, disk_name=disk)["reservation_id"]
    wait_for_status(api, rid, "active")
    failing_snapshots(True)
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    held = wait_for(
        lambda: (row := _row(local_cloud, disk))["lifecycle_error"] and row,
        message="the failure recorded on the disk",
    )
    assert held["reservation_id"] == uuid.UUID(rid) and held["in_use"]
    assert "failed" in held["lifecycle_error"]
    assert [v["State"] for v in _volumes(local_cloud, rid)] == ["available"], "volume kept"
    failing_snapshots(False)
    freed = _free(local_cloud, disk)
    assert freed["lifecycle_error"] is None
    assert [s["State"] for s in _snapshots(local_cloud, disk)] == ["completed"]
    assert _volumes(local_cloud, rid) == []


def test_snapshots_that_keep_failing_end_the_execution_after_10_and_the_sweeper_saves_it(
    api, local_cloud, disk, failing_snapshots
):
    """The state machine's retries of a failing snapshot are bounded: the 10th failure goes
    to `Disk not saved` (hold and volume kept), and the sweeper carries on from there."""
    rid = reserve(api, disk_name=disk)["reservation_id"]
    wait_for_status(api, rid, "active")
    failing_snapshots(True)
    cancel(api, rid)
    sfn = local_cloud.aws.client("stepfunctions")
    arn = execution_arn(local_cloud, rid)
    ended = wait_for(
        lambda: (e := sfn.describe_execution(executionArn=arn))["status"] != "RUNNING" and e,
        timeout=120,
        message="the execution gave up",
    )
    assert ended["status"] == "FAILED" and ended["error"] == "DiskNotSaved"
    assert execution_history(local_cloud, rid).count("Count the failed snapshot") == 10
    held = _row(local_cloud, disk)
    assert held["reservation_id"] == uuid.UUID(rid) and "failed" in held["lifecycle_error"]
    assert [v["State"] for v in _volumes(local_cloud, rid)] == ["available"], "volume kept"
    failing_snapshots(False)
    _sweep_until_free(local_cloud, disk)
    assert _volumes(local_cloud, rid) == []


def _reconcile_and_compare(cloud: Any, disk: str) -> dict[str, Any]:
    """One run of the EBS disk reconciler at a step where the lifecycle holds still: it
    leaves every field the lifecycle owns as it was."""
    before = _row(cloud, disk)
    invocation = cloud.lambdas.invoke("DiskReconciler", {})
    assert not invocation.errored, invocation.payload
    assert _row(cloud, disk) == before
    return before


def test_the_reconciler_at_every_step_changes_nothing_the_lifecycle_owns(
    api, local_cloud, disk, failing_snapshots
):
    # Taken, volume attached, pod held in provisioning (its image never pulls).
    local_cloud.cluster.kubelet.image_pulls_fail = True
    rid = reserve(api, disk_name=disk)["reservation_id"]
    wait_for_status(api, rid, "preparing")
    wait_for(lambda: objects_of(local_cloud, rid)["persistentvolumeclaims"], message="claim")
    assert _reconcile_and_compare(local_cloud, disk)["reservation_id"] == uuid.UUID(rid)
    # Ended, its snapshot failing: still held, the reason on the row, the volume kept.
    failing_snapshots(True)
    cancel(api, rid)
    wait_for(lambda: _row(local_cloud, disk)["lifecycle_error"], message="snapshot failed")
    assert _reconcile_and_compare(local_cloud, disk)["in_use"]
    # Saved and freed: no volume; the reconciler does not take it back or clear anything.
    failing_snapshots(False)
    _free(local_cloud, disk)
    assert _reconcile_and_compare(local_cloud, disk)["reservation_id"] is None


@pytest.fixture
def slow_snapshots(local_cloud: Any) -> Iterator[Callable[[float], None]]:
    """New snapshots stay pending this many real seconds, so a sweep finds them unfinished."""
    before = local_cloud.snapshots.delay_seconds
    yield lambda seconds: setattr(local_cloud.snapshots, "delay_seconds", seconds)
    local_cloud.snapshots.delay_seconds = before


def _sweep_until_free(cloud: Any, disk: str) -> list[dict[str, Any]]:
    """Sweeps, as EventBridge would run them, until the disk is free; their statistics."""
    runs: list[dict[str, Any]] = []

    def swept_free() -> bool:
        statistics = sweep(cloud)["statistics"]
        if statistics:  # not skipped because a scheduled sweep held the lock
            runs.append(statistics)
        if _row(cloud, disk)["reservation_id"] is None:
            return True
        time.sleep(0.3)
        return False

    wait_for(swept_free, timeout=40, message=f"disk {disk} freed by the sweeper")
    return runs


def test_a_stopped_executions_disk_is_saved_by_the_sweeper_and_remounts_from_its_snapshot(
    api, local_cloud, disk, slow_snapshots
):
    rid = reserve(api, disk_name=disk, hours=0.6)["reservation_id"]
    wait_for_status(api, rid, "active")
    (volume,) = _volumes(local_cloud, rid)
    slow_snapshots(1.5)  # the sweeper must come back for the snapshot
    stop_execution(local_cloud, rid)

    runs = _sweep_until_free(local_cloud, disk)

    assert runs[0]["reservations_ended"] == 1
    assert sum(r["disks_waiting"] for r in runs) >= 2, "pod stopping, then snapshot pending"
    assert [r["disks_freed"] for r in runs][-1] == 1 and sum(r["errors"] for r in runs) == 0
    (saved,) = _snapshots(local_cloud, disk)
    assert saved["State"] == "completed" and saved["VolumeId"] == volume["VolumeId"]
    assert _volumes(local_cloud, rid) == [], "deleted only after its snapshot completed"
    freed = _row(local_cloud, disk)
    assert not freed["in_use"] and freed["lifecycle_error"] is None
    assert_nothing_left(local_cloud, rid)
    assert (
        local_cloud.kubernetes.store.list("persistentvolumes", None, f"gpu-dev/reservation={rid}")[
            "items"
        ]
        == []
    )
    assert sweep(local_cloud)["repairs"] == 0, "nothing left to repair"

    again = reserve(api, disk_name=disk)["reservation_id"]
    wait_for_status(api, again, "active")
    (remounted,) = _volumes(local_cloud, again)
    assert remounted["SnapshotId"] == saved["SnapshotId"]


def test_an_execution_that_died_while_its_snapshot_ran_has_its_disk_freed_by_the_sweeper(
    api, local_cloud, disk, slow_snapshots
):
    """As after `Disk not saved`: the row ended, the hold and volume kept, no execution."""
    rid = reserve(api, disk_name=disk, hours=0.6)["reservation_id"]
    wait_for_status(api, rid, "active")
    slow_snapshots(4)
    cancel(api, rid)
    wait_for(lambda: _snapshots(local_cloud, disk), message="the execution's snapshot")
    stop_execution(local_cloud, rid)
    assert show(api, rid)["status"] == "cancelled" and _row(local_cloud, disk)["in_use"]

    runs = _sweep_until_free(local_cloud, disk)

    # The sweeper frees it, unless the save task that was running when the execution
    # stopped did first (StopExecution ends no running Lambda, in AWS as here): once.
    assert runs[0]["reservations_ended"] == 0
    assert sum(run["disks_freed"] for run in runs) <= 1
    (saved,) = _snapshots(local_cloud, disk)  # the execution's, found by its tag
    assert saved["State"] == "completed"
    assert _volumes(local_cloud, rid) == []


def test_a_multinode_reservation_mounts_its_disk_on_node_0_only_and_saves_it(
    api, local_cloud, disk
):
    rid = reserve(api, gpu_type="h100", gpu_count=16, hours=0.3, disk_name=disk)["reservation_id"]
    wait_for_status(api, rid, "active", timeout=40)
    (volume,) = _volumes(local_cloud, rid)
    pods = {
        p["metadata"]["labels"]["gpu-dev/rank"]: p for p in objects_of(local_cloud, rid)["pods"]
    }
    assert sorted(pods) == ["0", "1"]
    claims = {  # the home's; every pod also has the personal share's (test_shared_files.py)
        rank: [
            v
            for v in pod["spec"]["volumes"]
            if "persistentVolumeClaim" in v and v["name"] == "dev-home"
        ]
        for rank, pod in pods.items()
    }
    assert [v["persistentVolumeClaim"]["claimName"] for v in claims["0"]] == [f"gpu-dev-{rid}-home"]
    assert claims["1"] == [], "node 1's pod has no claim on the disk"
    env = {
        rank: {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        for rank, pod in pods.items()
    }
    assert env["0"]["GPU_DEV_PERSISTENT_HOME"] == "true"
    assert env["1"]["GPU_DEV_PERSISTENT_HOME"] == "false"
    node0 = local_cloud.kubernetes.store.get("nodes", None, pods["0"]["spec"]["nodeName"])
    assert volume["AvailabilityZone"] == node0["metadata"]["labels"]["topology.kubernetes.io/zone"]
    assert [
        a["InstanceId"]
        for a in _ec2(local_cloud).describe_volumes(VolumeIds=[volume["VolumeId"]])["Volumes"][0][
            "Attachments"
        ]
    ] == [pods["0"]["spec"]["nodeName"]], "attached to node 0"

    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    _free(local_cloud, disk)
    (saved,) = _snapshots(local_cloud, disk)
    assert saved["State"] == "completed" and saved["VolumeId"] == volume["VolumeId"]
    assert _volumes(local_cloud, rid) == []
    assert_nothing_left(local_cloud, rid)
