"""The personal network file system on the local cloud (issue #34, docs/shared-files.md):
every pod of a reservation mounts the user's own EFS access point at /shared-personal
through the EFS CSI driver's simulation; the access point is made once per user and reused;
another user's pods never mount it; the compiler caches point at it."""

from __future__ import annotations

import json
import time
from typing import Any

import psycopg
from botocore.credentials import Credentials

from localcloud.stack import LocalCloud
from tests.lifecycle.helpers import (
    cancel,
    objects_of,
    reserve,
    wait_for_status,
)
from tests.support.api import ApiClient

MOUNT = "/run/gpu-dev/share/mnt"  # linked from /shared-personal by startup.sh


def _mounts(cloud: LocalCloud, reservation_id: str) -> dict[str, str]:
    """Each pod's volume handle mounted at /shared-personal (by the stand-in's EFS CSI
    driver), through its claim and the claim's PersistentVolume."""
    assert cloud.cluster is not None and cloud.kubernetes is not None
    found = objects_of(cloud, reservation_id)
    volumes = {
        v["metadata"]["name"]: v
        for v in cloud.kubernetes.store.list("persistentvolumes", None)["items"]
    }
    claims = {c["metadata"]["name"]: c for c in found["persistentvolumeclaims"]}
    efs = cloud.cluster.storage.efs
    assert efs is not None
    mounts = {}
    for pod in found["pods"]:
        container = pod["spec"]["containers"][0]
        [mount] = [m for m in container["volumeMounts"] if m["mountPath"] == MOUNT]
        [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
        claim = claims[volume["persistentVolumeClaim"]["claimName"]]
        handle = volumes[claim["spec"]["volumeName"]]["spec"]["csi"]["volumeHandle"]
        assert handle in efs.mounted.get(pod["metadata"]["uid"], set())
        mounts[pod["metadata"]["name"]] = handle
    return mounts


def _environment(cloud: LocalCloud, reservation_id: str) -> list[dict[str, str]]:
    return [
        {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
        for pod in objects_of(cloud, reservation_id)["pods"]
    ]


def _access_points(cloud: LocalCloud) -> list[dict[str, Any]]:
    assert cloud.aws is not None
    return list(cloud.aws.client("efs").describe_access_points()["AccessPoints"])


def _rows(cloud: LocalCloud, user: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(cloud.database_url) as conn:
        return conn.execute(
            "SELECT access_point_id FROM shared_file_access_points WHERE user_id = %s", (user,)
        ).fetchall()


def test_both_pods_of_a_two_node_reservation_mount_the_users_access_point(
    local_cloud: LocalCloud, api: ApiClient
):
    rid = reserve(api, gpu_type="h100", gpu_count=16, hours=0.3)["reservation_id"]
    wait_for_status(api, rid, "active")

    mounts = _mounts(local_cloud, rid)
    assert len(mounts) == 2
    [handle] = set(mounts.values())
    file_system, _, access_point = handle.split(":")
    [point] = [p for p in _access_points(local_cloud) if p["AccessPointId"] == access_point]
    assert point["FileSystemId"] == file_system
    assert point["RootDirectory"]["Path"] == "/users/alice"
    assert point["PosixUser"] == {"Uid": 1081, "Gid": 1081}
    assert _rows(local_cloud, "alice") == [(access_point,)]
    for env in _environment(local_cloud, rid):
        assert env["CCACHE_DIR"] == "/shared-personal/.cache/ccache"
        assert env["SCCACHE_DIR"] == "/shared-personal/.cache/sccache"
        assert env["CCACHE_MAXSIZE"] == "20G"

    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    # The claim is held (pvc-protection) until its pods are gone, the volume (pv-protection)
    # until its claim is; then everything goes.
    assert local_cloud.kubernetes is not None
    store = local_cloud.kubernetes.store

    def left() -> list[str]:
        volumes = store.list("persistentvolumes", None)["items"]
        return [
            f"{kind}/{item['metadata']['name']}"
            for kind, items in [*objects_of(local_cloud, rid).items(), ("pv", volumes)]
            for item in items
            if rid in item["metadata"]["name"] or kind != "pv"
        ]

    deadline = time.monotonic() + 20
    while left():
        assert time.monotonic() < deadline, left()
        time.sleep(0.1)
    assert [p["AccessPointId"] for p in _access_points(local_cloud)].count(access_point) == 1


def test_the_access_point_is_made_once_and_another_users_pods_never_mount_it(
    local_cloud: LocalCloud, api: ApiClient
):
    # Two first-ish reservations of alice at once, and one of bob's.
    first = reserve(api, gpu_type="t4", gpu_count=1)["reservation_id"]
    second = reserve(api, gpu_type="t4", gpu_count=1)["reservation_id"]
    theirs = reserve(api, profile="bob", gpu_type="t4", gpu_count=1, github_user="bob")[
        "reservation_id"
    ]
    for rid, profile in ((first, "alice"), (second, "alice"), (theirs, "bob")):
        wait_for_status(api, rid, "active", profile=profile)

    alices = set(_mounts(local_cloud, first).values()) | set(_mounts(local_cloud, second).values())
    bobs = set(_mounts(local_cloud, theirs).values())
    assert len(alices) == 1 and len(bobs) == 1
    assert alices.isdisjoint(bobs)
    roots = {p["AccessPointId"]: p["RootDirectory"]["Path"] for p in _access_points(local_cloud)}
    assert roots[bobs.pop().split(":")[2]] == "/users/bob"
    assert len([path for path in roots.values() if path == "/users/alice"]) == 1


def test_an_access_point_deleted_behind_our_back_is_made_again_for_the_next_reservation(
    local_cloud: LocalCloud, api: ApiClient
):
    """The review's finding: the recorded access point was reused though EFS no longer had
    it, so every later pod of the user waited in FailedMount forever. Now the lifecycle
    checks it and makes another, rooted at the same directory."""
    assert local_cloud.aws is not None
    efs = local_cloud.aws.client("efs")
    rid = reserve(api, gpu_type="t4", gpu_count=1, hours=0.3)["reservation_id"]
    wait_for_status(api, rid, "active")
    [handle] = set(_mounts(local_cloud, rid).values())
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    gone = handle.split(":")[2]
    efs.delete_access_point(AccessPointId=gone)  # behind our back

    rid = reserve(api, gpu_type="t4", gpu_count=1, hours=0.3)["reservation_id"]
    wait_for_status(api, rid, "active")
    [again] = set(_mounts(local_cloud, rid).values())
    made = again.split(":")[2]
    assert made != gone
    (point,) = efs.describe_access_points(AccessPointId=made)["AccessPoints"]
    assert point["RootDirectory"]["Path"] == "/users/alice"


def test_a_second_principal_named_alice_never_gets_alices_access_point(
    local_cloud: LocalCloud, api: ApiClient
):
    """The access point is chosen from the reservation's user, which the API binds to the
    principal that first used the name: an Identity Center session that calls itself
    `alice` is refused before anything is written, so it never reaches her share."""
    assert local_cloud.aws is not None
    assert api.call("GET", "/v1/me", profile="alice").status == 200  # alice's row, bound
    before = (_rows(local_cloud, "alice"), _access_points(local_cloud))
    iam, sts = local_cloud.aws.client("iam"), local_cloud.aws.client("sts")
    role = iam.create_role(
        RoleName="AWSReservedSSO_SharedFiles_0123456789abcdef", AssumeRolePolicyDocument="{}"
    )["Role"]
    issued = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="alice")["Credentials"]
    other = Credentials(issued["AccessKeyId"], issued["SecretAccessKey"], issued["SessionToken"])
    body = json.dumps({"gpu_type": "t4", "gpu_count": 1, "hours": 1}).encode()
    path = "/v1/reservations"
    reply = api.send("POST", path, api.signed_headers("POST", path, body, other), body)
    assert reply.status == 403, reply.body
    assert (_rows(local_cloud, "alice"), _access_points(local_cloud)) == before
