"""`gpu-dev disk clone SRC DST` end to end on the local cloud (gpudev/disks/clone.py): a
disk saved by a reservation is cloned through the API, the jobs consumer copies its latest
snapshot as the clone's, and a later reservation with `--disk DST` gets a volume made from
that copy."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from gpudev.disks.clone import CLONED_BY_TAG
from gpudev.disks.ebs import tags_of
from tests.lifecycle.helpers import cancel, reserve, wait_for_status
from tests.support.waiting import wait_for


@pytest.fixture
def disk(local_cloud: Any) -> str:
    name = f"src-{uuid.uuid4().hex[:6]}"
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn) VALUES"
            " ('alice', 'arn:aws:iam::123456789012:user/alice') ON CONFLICT DO NOTHING"
        )
        conn.execute("INSERT INTO disks (user_id, disk_name) VALUES ('alice', %s)", (name,))
    return name


def _volumes(cloud: Any, rid: str) -> list[dict[str, Any]]:
    ec2 = cloud.aws.client("ec2")
    filters = [{"Name": "tag:reservation-id", "Values": [rid]}]
    return list(ec2.describe_volumes(Filters=filters)["Volumes"])


def _disk(api: Any, name: str) -> dict[str, Any]:
    reply = api.call("GET", f"/v1/disks/{name}")
    assert reply.status == 200, reply.body
    return dict(reply.body)


def test_a_clone_of_a_saved_disk_is_restored_by_its_first_reservation(api, local_cloud, disk):
    refused = api.call("POST", f"/v1/disks/{disk}/clone", body={"new_name": "never"})
    assert refused.status == 409, refused.body  # nothing saved yet
    assert "no completed snapshot" in str(refused.body)
    first = reserve(api, disk_name=disk)["reservation_id"]
    wait_for_status(api, first, "active")
    cancel(api, first)
    wait_for_status(api, first, "cancelled")
    wait_for(
        lambda: (d := _disk(api, disk))["last_snapshot_at"] and not d["in_use"],
        timeout=30,
        message="the source saved and freed",
    )
    dst = f"{disk}-copy"

    made = api.call("POST", f"/v1/disks/{disk}/clone", body={"new_name": dst})

    assert made.status == 202, made.body
    assert made.body["disk_name"] == dst
    wait_for(
        lambda: _disk(api, dst)["operation_status"] == "completed",
        timeout=30,
        message="the clone's copy completed",
    )
    ec2 = local_cloud.aws.client("ec2")
    mine = [
        {"Name": "tag-key", "Values": [CLONED_BY_TAG]},
        {"Name": "tag:disk_name", "Values": [dst]},
    ]
    (copy,) = ec2.describe_snapshots(OwnerIds=["self"], Filters=mine)["Snapshots"]
    assert tags_of(copy)["gpu-dev-user"] == "alice"

    second = reserve(api, disk_name=dst)["reservation_id"]
    wait_for_status(api, second, "active")
    (volume,) = _volumes(local_cloud, second)
    assert volume["SnapshotId"] == copy["SnapshotId"]
    cancel(api, second)
    wait_for_status(api, second, "cancelled")
