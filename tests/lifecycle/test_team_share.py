"""The team share on the local cloud (issue #34 item 2, docs/shared-files.md "The team
share"): with `SHARED_FILES_TEAM_SHARE` (CDK context gpudev:teamShare) at rw or ro, both pods
of a 2-node h100 reservation mount the team's access point through the stand-in's EFS CSI
driver, read-only when so set; off, no pod mounts it. `show`'s mounts and `disk list`'s
share usage come from the API (GET /v1/reservations/{id}/mounts, GET /v1/shares)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from gpudev.settings import shared_files_settings
from localcloud import moto_efs
from localcloud.stack import LocalCloud
from tests.lifecycle.helpers import cancel, objects_of, reserve, wait_for_status
from tests.support.api import ApiClient

TEAM_MOUNT = "/run/gpu-dev/share/team"  # linked from /shared by startup.sh
PERSONAL_MOUNT = "/run/gpu-dev/share/mnt"


@contextmanager
def team_share(mode: str) -> Iterator[None]:
    """The deployment's team share set to `mode` for the functions (in this process), as
    the context's variable sets it in AWS; as it was, on leaving."""
    before = os.environ.get("SHARED_FILES_TEAM_SHARE")
    os.environ["SHARED_FILES_TEAM_SHARE"] = mode
    shared_files_settings.cache_clear()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SHARED_FILES_TEAM_SHARE", None)
        else:
            os.environ["SHARED_FILES_TEAM_SHARE"] = before
        shared_files_settings.cache_clear()


def _mounted(cloud: LocalCloud, rid: str, path: str) -> dict[str, tuple[str, bool, bool]]:
    """Each pod's (volume handle, the container's readOnly, the driver mounted it read-only)
    at `path`: through its claim and the claim's PersistentVolume."""
    assert cloud.cluster is not None and cloud.kubernetes is not None
    found = objects_of(cloud, rid)
    volumes = {
        v["metadata"]["name"]: v
        for v in cloud.kubernetes.store.list("persistentvolumes", None)["items"]
    }
    claims = {c["metadata"]["name"]: c for c in found["persistentvolumeclaims"]}
    efs = cloud.cluster.storage.efs
    assert efs is not None
    mounts = {}
    for pod in found["pods"]:
        uid = pod["metadata"]["uid"]
        container = pod["spec"]["containers"][0]
        at = [m for m in container["volumeMounts"] if m["mountPath"] == path]
        if not at:
            continue
        [mount] = at
        [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
        claim = claims[volume["persistentVolumeClaim"]["claimName"]]
        handle = volumes[claim["spec"]["volumeName"]]["spec"]["csi"]["volumeHandle"]
        assert handle in efs.mounted.get(uid, set())
        mounts[pod["metadata"]["name"]] = (
            handle,
            bool(mount.get("readOnly")),
            (uid, handle) in efs.read_only,
        )
    return mounts


def _team_access_point(cloud: LocalCloud) -> str:
    assert cloud.aws is not None
    [point] = [
        p
        for p in cloud.aws.client("efs").describe_access_points()["AccessPoints"]
        if p["RootDirectory"]["Path"] == "/team"
    ]
    assert point["PosixUser"] == {"Uid": 1081, "Gid": 1081}
    return str(point["AccessPointId"])


def _mounts(api: ApiClient, rid: str) -> dict[str, dict[str, Any]]:
    reply = api.call("GET", f"/v1/reservations/{rid}/mounts")
    assert reply.status == 200, reply.body
    return {m["path"]: m for m in reply.body["mounts"]}


def _two_nodes(api: ApiClient) -> str:
    rid = str(reserve(api, gpu_type="h100", gpu_count=16, hours=0.3)["reservation_id"])
    wait_for_status(api, rid, "active")
    return rid


def _end(api: ApiClient, cloud: LocalCloud, rid: str) -> None:
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    assert cloud.kubernetes is not None
    deadline = time.monotonic() + 20
    while any(
        rid in v["metadata"]["name"]
        for v in cloud.kubernetes.store.list("persistentvolumes", None)["items"]
    ):
        assert time.monotonic() < deadline, "the reservation's volumes were not deleted"
        time.sleep(0.1)


@pytest.mark.parametrize("mode", ["rw", "ro"])
def test_both_pods_of_a_two_node_reservation_mount_the_team_share(
    local_cloud: LocalCloud, api: ApiClient, mode: str
):
    team = _team_access_point(local_cloud)
    with team_share(mode):
        rid = _two_nodes(api)
        mounted = _mounted(local_cloud, rid, TEAM_MOUNT)
        personal = _mounted(local_cloud, rid, PERSONAL_MOUNT)
        mounts = _mounts(api, rid)
    assert len(mounted) == 2 and len(personal) == 2
    read_only = mode == "ro"
    for handle, container_read_only, driver_read_only in mounted.values():
        assert handle.split(":")[2] == team
        assert container_read_only is read_only and driver_read_only is read_only
    for handle, container_read_only, driver_read_only in personal.values():
        assert handle.split(":")[2] != team  # the user's own, read-write
        assert not container_read_only and not driver_read_only
    [volume] = [
        v
        for v in objects_of(local_cloud, rid)["persistentvolumeclaims"]
        if "-team" in v["metadata"]["name"]
    ]
    assert volume["spec"]["accessModes"] == ["ReadOnlyMany" if read_only else "ReadWriteMany"]
    # show's mounts: from the reservation's row, the access point's and the settings
    assert mounts["/shared"] == {
        "path": "/shared",
        "what": "team share",
        "nodes": "every node",
        "mode": mode,
        "disk_name": None,
        "access_point_id": None,
    }
    [personal_handle] = {handle for handle, _, _ in personal.values()}
    assert mounts["/shared-personal"]["access_point_id"] == personal_handle.split(":")[2]
    assert mounts["/shared-personal"]["mode"] == "rw"
    assert mounts["/home/dev"]["what"] == "pod disk"  # no named disk
    _end(api, local_cloud, rid)


def test_with_the_team_share_off_no_pod_mounts_it(local_cloud: LocalCloud, api: ApiClient):
    with team_share("off"):
        rid = _two_nodes(api)
        mounts = _mounts(api, rid)
        shares = api.call("GET", "/v1/shares")
    assert _mounted(local_cloud, rid, TEAM_MOUNT) == {}
    assert len(_mounted(local_cloud, rid, PERSONAL_MOUNT)) == 2
    found = objects_of(local_cloud, rid)
    assert not [c for c in found["persistentvolumeclaims"] if "-team" in c["metadata"]["name"]]
    assert "/shared" not in mounts and "/shared-personal" in mounts
    assert shares.status == 200 and shares.body["team"] is None
    _end(api, local_cloud, rid)


def test_the_share_listing_gives_the_file_systems_metered_size_and_the_access_point(
    local_cloud: LocalCloud, api: ApiClient
):
    """`disk list`'s figure: what EFS metered for the whole file system, with its time;
    moto (through the seam) answers what EFS would have metered."""
    assert local_cloud.aws is not None
    efs = local_cloud.aws.client("efs")
    file_system = os.environ["SHARED_FILES_FILE_SYSTEM_ID"]
    [described] = efs.describe_file_systems(FileSystemId=file_system)["FileSystems"]
    rid = str(reserve(api, gpu_type="t4", gpu_count=1, hours=0.3)["reservation_id"])
    wait_for_status(api, rid, "active")  # alice's access point made (or reused)
    at = described["CreationTime"].timestamp() + 7200
    moto_efs.meter(file_system, 3 * 2**30, at)
    with team_share("ro"):
        reply = api.call("GET", "/v1/shares")
    assert reply.status == 200, reply.body
    personal = reply.body["personal"]
    [mounted] = {h for h, _, _ in _mounted(local_cloud, rid, PERSONAL_MOUNT).values()}
    assert personal["access_point_id"] == mounted.split(":")[2]
    assert personal["usage"]["metered_bytes"] == 3 * 2**30
    assert personal["usage"]["scope"] == "file system"
    assert personal["usage"]["file_system_id"] == file_system
    assert reply.body["team"] == {"mount_path": "/shared", "mode": "ro"}
    _end(api, local_cloud, rid)


def test_shows_home_is_the_named_disk_on_node_0(local_cloud: LocalCloud, api: ApiClient):
    import uuid

    import psycopg

    name = f"home-{uuid.uuid4().hex[:6]}"
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn) VALUES"
            " ('alice', 'arn:aws:iam::123456789012:user/alice') ON CONFLICT DO NOTHING"
        )
        conn.execute("INSERT INTO disks (user_id, disk_name) VALUES ('alice', %s)", (name,))
    rid = str(reserve(api, gpu_type="t4", gpu_count=1, hours=0.3, disk_name=name)["reservation_id"])
    mounts = _mounts(api, rid)  # from the row: whatever the reservation's status
    assert mounts["/home/dev"] == {
        "path": "/home/dev",
        "what": "named disk",
        "nodes": "node 0",
        "mode": "rw",
        "disk_name": name,
        "access_point_id": None,
    }
    assert api.call("GET", f"/v1/reservations/{rid}/mounts", profile="bob").status == 404
    cancel(api, rid)
    wait_for_status(api, rid, ("cancelled", "failed", "expired"))
