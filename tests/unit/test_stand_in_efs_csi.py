"""The stand-in's EFS CSI node side (localcloud/kubernetes/efs_csi.py) against moto: a
volume mounts only when the file system, the access point on it, a mount target in the
node's zone and VPC, and the mount options its policy demands are all there; each missing
piece is the driver's FailedMount reason, and a mounted volume stays mounted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from cdk_app.shared_files_policy import file_system_policy
from localcloud import moto_efs
from localcloud.kubernetes.efs_csi import EfsCsiNode

ZONE, OTHER_ZONE = "us-east-2a", "us-east-2b"


@pytest.fixture
def aws() -> Iterator[tuple[Any, Any]]:
    import boto3
    from moto import mock_aws

    uninstall = moto_efs.install()
    try:
        with mock_aws():
            yield (
                boto3.client("efs", region_name="us-east-2"),
                boto3.client("ec2", region_name="us-east-2"),
            )
    finally:
        uninstall()


def _subnet(ec2: Any, zone: str) -> str:
    subnets = ec2.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}])
    return next(s["SubnetId"] for s in subnets["Subnets"] if s["AvailabilityZone"] == zone)


def _node(ec2: Any, zone: str) -> dict[str, Any]:
    instance = ec2.run_instances(
        ImageId="ami-12c6146b", MinCount=1, MaxCount=1, SubnetId=_subnet(ec2, zone)
    )["Instances"][0]["InstanceId"]
    return {
        "metadata": {"name": instance, "labels": {"topology.kubernetes.io/zone": zone}},
        "spec": {"providerID": f"aws:///{zone}/{instance}"},
    }


def _pv(handle: str, options: tuple[str, ...] = ("tls", "iam")) -> dict[str, Any]:
    return {
        "metadata": {"name": "pv-shared"},
        "spec": {
            "csi": {"driver": "efs.csi.aws.com", "volumeHandle": handle},
            "mountOptions": list(options),
        },
    }


def _pod(uid: str = "pod-1") -> dict[str, Any]:
    return {"metadata": {"uid": uid}}


def _share(efs: Any, ec2: Any, zones: tuple[str, ...] = (ZONE,)) -> tuple[str, str]:
    made = efs.create_file_system(CreationToken="t", Encrypted=True)
    fs = made["FileSystemId"]
    policy = file_system_policy(made["FileSystemArn"], "arn:aws:iam::123456789012:role/csi", "*")
    efs.put_file_system_policy(FileSystemId=fs, Policy=json.dumps(policy))
    for zone in zones:
        efs.create_mount_target(FileSystemId=fs, SubnetId=_subnet(ec2, zone))
    point = efs.create_access_point(
        ClientToken="c", FileSystemId=fs, PosixUser={"Uid": 1081, "Gid": 1081}
    )["AccessPointId"]
    return fs, point


def test_a_complete_share_mounts_in_every_pod_and_stays_mounted(aws):
    efs, ec2 = aws
    fs, point = _share(efs, ec2, (ZONE, OTHER_ZONE))
    driver = EfsCsiNode(efs, ec2, retry_seconds=0)
    for uid, zone in (("pod-0", ZONE), ("pod-1", OTHER_ZONE)):
        assert driver.mount_problem(_pod(uid), _node(ec2, zone), _pv(f"{fs}::{point}")) is None
        assert driver.mounted[uid] == {f"{fs}::{point}"}
    efs.delete_access_point(AccessPointId=point)  # a mounted volume is not checked again
    assert driver.mount_problem(_pod("pod-0"), _node(ec2, ZONE), _pv(f"{fs}::{point}")) is None


@pytest.mark.parametrize(
    ("break_it", "reason"),
    [
        (
            lambda efs, ec2, fs, point: ("fs-0000000000", point, ("tls", "iam")),
            "Failed to find file system",
        ),
        (
            lambda efs, ec2, fs, point: (fs, "fsap-00000000000000000", ("tls", "iam")),
            "Failed to find access point",
        ),
        (lambda efs, ec2, fs, point: (fs, point, ("iam",)), "requires tls"),
        (lambda efs, ec2, fs, point: (fs, point, ()), "requires tls and iam"),
    ],
)
def test_each_missing_piece_is_a_failed_mount(aws, break_it, reason):
    efs, ec2 = aws
    fs, point = _share(efs, ec2)
    fs, point, options = break_it(efs, ec2, fs, point)
    driver = EfsCsiNode(efs, ec2, retry_seconds=0)
    problem = driver.mount_problem(_pod(), _node(ec2, ZONE), _pv(f"{fs}::{point}", options))
    assert problem is not None and reason in problem
    assert problem.startswith('MountVolume.SetUp failed for volume "pv-shared"')
    assert driver.mounted == {}


def test_an_access_point_of_another_file_system_is_refused(aws):
    efs, ec2 = aws
    fs, _ = _share(efs, ec2)
    other = efs.create_file_system(CreationToken="other")["FileSystemId"]
    theirs = efs.create_access_point(ClientToken="o", FileSystemId=other)["AccessPointId"]
    driver = EfsCsiNode(efs, ec2, retry_seconds=0)
    problem = driver.mount_problem(_pod(), _node(ec2, ZONE), _pv(f"{fs}::{theirs}"))
    assert problem is not None and f"belongs to file system {other}, not {fs}" in problem


def test_a_node_in_a_zone_without_a_mount_target_waits_until_one_is_made(aws):
    efs, ec2 = aws
    fs, point = _share(efs, ec2, (ZONE,))
    node = _node(ec2, OTHER_ZONE)
    driver = EfsCsiNode(efs, ec2, retry_seconds=0)
    problem = driver.mount_problem(_pod(), node, _pv(f"{fs}::{point}"))
    assert problem is not None and f"no mount target in {OTHER_ZONE}" in problem
    efs.create_mount_target(FileSystemId=fs, SubnetId=_subnet(ec2, OTHER_ZONE))
    assert driver.mount_problem(_pod(), node, _pv(f"{fs}::{point}")) is None


def test_a_malformed_handle_is_refused(aws):
    efs, ec2 = aws
    driver = EfsCsiNode(efs, ec2, retry_seconds=0)
    problem = driver.mount_problem(_pod(), _node(ec2, ZONE), _pv("vol-123"))
    assert problem is not None and "Invalid volume handle" in problem
