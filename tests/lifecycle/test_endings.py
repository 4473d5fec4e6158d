"""Every ending says why, through the whole deployment (issue #28 item 4): a reservation
stuck preparing because its disk's volume cannot attach ends at the ready deadline with the
attach failure the cluster reported (its FailedAttachVolume event), not "the pod is
starting"; the same words are in `show` and the status line."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.lifecycle.helpers import assert_nothing_left, reserve, show, wait_for_status
from tests.support.waiting import wait_for


@pytest.fixture
def disk(local_cloud: Any) -> str:
    name = f"stuck-{uuid.uuid4().hex[:6]}"
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn) VALUES"
            " ('alice', 'arn:aws:iam::123456789012:user/alice') ON CONFLICT DO NOTHING"
        )
        conn.execute("INSERT INTO disks (user_id, disk_name) VALUES ('alice', %s)", (name,))
    return name


@pytest.fixture
def stale_holder(local_cloud: Any) -> Iterator[str]:
    """An EC2 instance outside the cluster that every volume is attached to before the EBS
    CSI attach (a dead node's stale attachment): EC2 then refuses the attach (VolumeInUse)."""
    ec2 = local_cloud.aws.client("ec2")
    holder = ec2.run_instances(
        ImageId="ami-12c6146b", MinCount=1, MaxCount=1, InstanceType="t3.micro"
    )["Instances"][0]["InstanceId"]
    local_cloud.cluster.storage.attacher.stale_holder = holder
    try:
        yield holder
    finally:
        _let_go(local_cloud, holder)
        ec2.terminate_instances(InstanceIds=[holder])


def _let_go(cloud: Any, holder: str) -> None:
    """The fault ends: the stale holder detaches what it held (the disk can then be saved)."""
    cloud.cluster.storage.attacher.stale_holder = None
    ec2 = cloud.aws.client("ec2")
    volumes = ec2.describe_volumes(
        Filters=[{"Name": "attachment.instance-id", "Values": [holder]}]
    )["Volumes"]
    for volume in volumes:
        ec2.detach_volume(VolumeId=volume["VolumeId"], InstanceId=holder)


def _disk_free(cloud: Any, name: str) -> bool:
    with psycopg.connect(cloud.database_url) as conn:
        row = conn.execute(
            "SELECT reservation_id IS NULL FROM disks WHERE disk_name = %s", (name,)
        ).fetchone()
    return bool(row and row[0])


def test_a_volume_that_cannot_attach_ends_at_the_ready_deadline_with_the_attach_failure(
    api, local_cloud, disk, stale_holder
):
    rid = reserve(api, disk_name=disk)["reservation_id"]
    preparing = wait_for(
        lambda: (
            (r := show(api, rid))["status"] == "preparing"
            and "FailedAttachVolume" in (r.get("current_detailed_status") or "")
            and r
        ),
        timeout=20,
        message="the attach failure in the status line while preparing",
    )
    assert "its disk's volume could not be attached" in preparing["current_detailed_status"]

    failed = wait_for_status(api, rid, "failed", timeout=30)

    reason = failed["failure_reason"]
    assert reason.startswith(
        "the pod was not ready in time: its disk's volume could not be attached "
        '(FailedAttachVolume: AttachVolume.Attach failed for volume "'
    ), reason
    assert "VolumeInUse" in reason  # EC2's refusal, at the end of the event's message
    assert failed["current_detailed_status"] == reason
    _let_go(local_cloud, stale_holder)  # its snapshot needs the volume detached
    wait_for(lambda: _disk_free(local_cloud, disk), timeout=30, message="disk saved and freed")
    assert_nothing_left(local_cloud, rid)
