"""The team share's pure parts (docs/shared-files.md, "The team share"): its settings, the
pod's volume and mount, read-only said three times (gpudev/cluster/team_share.py), the
claims' words (pod_claims.py), the synth check of its context (cdk_app/team_share.py), the
stand-in driver's read-only mounts, moto's honest metered size (localcloud/moto_efs.py),
and what the CLI says of the shares (gpudev_cli/shares.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import aws_cdk as cdk
import pytest

from cdk_app.declaration import SHARED_FILE_SYSTEM_ID, TEAM_SHARE, TEAM_SHARE_ACCESS_POINT
from cdk_app.shared_files_policy import file_system_policy
from cdk_app.team_share import check_team_share, team_share_mode
from gpudev.cluster import objects, pod_claims, team_share
from gpudev.settings import SettingsError, SharedFilesSettings, _load
from gpudev.shared_files.listing import file_system_usage
from gpudev_cli.shares import share_lines, size
from localcloud import moto_efs
from localcloud.kubernetes.efs_csi import EfsCsiNode

FS = "fs-0123456789abcdef0"
TEAM = "fsap-0123456789abcdef1"


def _reservation() -> Any:
    from gpudev.models import Reservation

    return Reservation.model_construct(reservation_id=uuid4(), user_id="alice", total_nodes=2)


# -- settings --------------------------------------------------------------------------


def test_the_team_share_is_off_by_default(monkeypatch):
    for variable in ("SHARED_FILES_TEAM_SHARE", "SHARED_FILES_TEAM_ACCESS_POINT_ID"):
        monkeypatch.delenv(variable, raising=False)
    settings = _load(SharedFilesSettings)
    assert settings.team_share == "off" and not settings.team_enabled
    assert TEAM_SHARE.default == "off" and TEAM_SHARE_ACCESS_POINT.default == "off"


@pytest.mark.parametrize("mode", ["ro", "rw"])
def test_the_team_share_is_on_with_the_file_system_and_its_access_point(monkeypatch, mode):
    monkeypatch.setenv("SHARED_FILES_FILE_SYSTEM_ID", FS)
    monkeypatch.setenv("SHARED_FILES_TEAM_SHARE", mode)
    monkeypatch.setenv("SHARED_FILES_TEAM_ACCESS_POINT_ID", TEAM)
    settings = _load(SharedFilesSettings)
    assert settings.team_enabled and settings.team_share == mode
    assert settings.team_access_point_id == TEAM


@pytest.mark.parametrize(
    "environment",
    [
        {"SHARED_FILES_TEAM_SHARE": "yes"},  # neither off, ro nor rw
        {"SHARED_FILES_TEAM_SHARE": "RW"},
        {"SHARED_FILES_TEAM_SHARE": "rw"},  # no access point
        {"SHARED_FILES_TEAM_SHARE": "ro", "SHARED_FILES_TEAM_ACCESS_POINT_ID": "fsap-xyz"},
        {"SHARED_FILES_TEAM_ACCESS_POINT_ID": "fs-0123456789abcdef0"},
    ],
)
def test_a_team_share_the_pods_could_not_mount_is_refused(monkeypatch, environment):
    monkeypatch.setenv("SHARED_FILES_FILE_SYSTEM_ID", FS)
    for variable, value in environment.items():
        monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match="SharedFilesSettings"):
        _load(SharedFilesSettings)


def test_a_team_share_without_the_shared_file_system_is_refused(monkeypatch):
    monkeypatch.delenv("SHARED_FILES_FILE_SYSTEM_ID", raising=False)
    monkeypatch.setenv("SHARED_FILES_TEAM_SHARE", "ro")
    monkeypatch.setenv("SHARED_FILES_TEAM_ACCESS_POINT_ID", TEAM)
    with pytest.raises(SettingsError, match="needs the shared file system"):
        _load(SharedFilesSettings)


# -- the pod ---------------------------------------------------------------------------


def _pod() -> dict[str, Any]:
    return {"spec": {"volumes": [], "containers": [{"volumeMounts": [], "env": []}]}}


def test_read_write_the_volume_claim_and_mount_say_nothing_of_read_only():
    reservation = _reservation()
    share = team_share.TeamShare(FS, TEAM, read_only=False)
    volume = team_share.persistent_volume(reservation, "gpu-dev", share)
    assert volume["spec"]["csi"] == {"driver": "efs.csi.aws.com", "volumeHandle": f"{FS}::{TEAM}"}
    assert volume["spec"]["accessModes"] == ["ReadWriteMany"]
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert set(volume["spec"]["mountOptions"]) == {"tls", "iam"}
    assert volume["metadata"]["labels"][objects.RESERVATION_LABEL] == str(
        reservation.reservation_id
    )
    claim = team_share.claim(reservation, share)
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
    pod = _pod()
    team_share.mount_in_pod(pod, team_share.name_of(reservation), read_only=False)
    assert pod["spec"]["volumes"] == [
        {"name": "shared-team", "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
    ]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "shared-team", "mountPath": "/run/gpu-dev/share/team"}
    ]
    assert pod["spec"]["containers"][0]["env"] == []  # the caches stay on the personal share


def test_read_only_is_said_by_the_volume_its_access_mode_the_pods_claim_and_the_mount():
    reservation = _reservation()
    share = team_share.TeamShare(FS, TEAM, read_only=True)
    volume = team_share.persistent_volume(reservation, "gpu-dev", share)
    assert volume["spec"]["csi"]["readOnly"] is True
    assert volume["spec"]["accessModes"] == ["ReadOnlyMany"]
    assert team_share.claim(reservation, share)["spec"]["accessModes"] == ["ReadOnlyMany"]
    pod = _pod()
    team_share.mount_in_pod(pod, team_share.name_of(reservation), read_only=True)
    [volume_in_pod] = pod["spec"]["volumes"]
    assert volume_in_pod["persistentVolumeClaim"]["readOnly"] is True
    [mount] = pod["spec"]["containers"][0]["volumeMounts"]
    assert mount["readOnly"] is True


def test_the_team_share_is_mounted_under_devs_own_parent_as_the_personal_one():
    from gpudev.cluster import shared_files

    assert team_share.POD_MOUNT_PATH.startswith(shared_files.SHARE_PARENT + "/")
    assert team_share.POD_MOUNT_PATH != shared_files.POD_MOUNT_PATH
    assert team_share.name_of(_reservation()) != shared_files.name_of(_reservation())


def test_a_start_waiting_on_the_team_share_says_so():
    reservation = _reservation()
    pod = _pod()
    team_share.mount_in_pod(pod, team_share.name_of(reservation), read_only=True)
    assert pod_claims.starting_step(pod, None) == "mounting team share /shared"


def test_a_failed_mount_of_the_team_volume_is_said_to_be_the_team_shares():
    reservation = _reservation()
    pod = _pod()
    name = team_share.name_of(reservation)
    team_share.mount_in_pod(pod, name, read_only=False)
    event = {
        "reason": "FailedMount",
        "message": f'MountVolume.SetUp failed for volume "{name}" : rpc error: code = Internal',
    }
    claim = pod_claims.claim_of_event(pod, event)
    assert claim is not None and claim.said(None) == "team share /shared"


# -- the synth check -------------------------------------------------------------------


def _scope(context: dict[str, Any]) -> cdk.Stack:
    return cdk.Stack(cdk.App(context=context), "S")


def test_the_team_share_context_is_off_by_default_and_takes_ro_or_rw():
    assert check_team_share(_scope({})) == "off"
    on = {SHARED_FILE_SYSTEM_ID.context_key: FS, TEAM_SHARE_ACCESS_POINT.context_key: TEAM}
    for mode in ("ro", "rw"):
        assert check_team_share(_scope({**on, TEAM_SHARE.context_key: mode})) == mode


@pytest.mark.parametrize("value", ["on", "RO", "true", True, "", 1, "read-only"])
def test_a_bad_team_share_value_stops_the_synth_with_a_sentence(value):
    with pytest.raises(ValueError, match=r"gpudev:teamShare: off, ro \(read-only\) or rw"):
        team_share_mode(_scope({TEAM_SHARE.context_key: value}))


def _said(stack: cdk.Stack, *words: str) -> None:
    """The stack carries an error annotation with `words`, in that order."""
    from aws_cdk.assertions import Annotations, Match

    annotations = Annotations.from_stack(stack)
    pattern = ".*".join(re.escape(w) for w in words)
    annotations.has_error("*", Match.string_like_regexp(pattern))


def _no_error(stack: cdk.Stack) -> None:
    from aws_cdk.assertions import Annotations, Match

    Annotations.from_stack(stack).has_no_error("*", Match.any_value())


def test_a_team_share_without_its_access_point_or_file_system_is_a_synth_error_of_the_stack():
    """An error annotation: `cdk synth` and a deploy of the main stack fail on it, while the
    cluster stack (which makes the access point) can still be deployed from the same app."""
    on = {TEAM_SHARE.context_key: "ro"}
    no_file_system = _scope(on)
    assert check_team_share(no_file_system) == "ro"
    _said(no_file_system, "needs the shared file system", "SharedFileSystemId")
    no_point = _scope({**on, SHARED_FILE_SYSTEM_ID.context_key: FS})
    check_team_share(no_point)
    _said(no_point, "needs the team access point", "TeamShareAccessPointId")
    wrong = {SHARED_FILE_SYSTEM_ID.context_key: FS, TEAM_SHARE_ACCESS_POINT.context_key: FS}
    not_a_point = _scope({**on, **wrong})
    check_team_share(not_a_point)
    _said(not_a_point, "needs the team access point", "got 'fs-0123456789abcdef0'")
    complete = _scope({**on, **wrong, TEAM_SHARE_ACCESS_POINT.context_key: TEAM})
    check_team_share(complete)
    _no_error(complete)


# -- the stand-in and moto -------------------------------------------------------------


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


def _node(ec2: Any, zone: str = "us-east-2a") -> dict[str, Any]:
    subnets = ec2.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}])
    subnet = next(s["SubnetId"] for s in subnets["Subnets"] if s["AvailabilityZone"] == zone)
    instance = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, SubnetId=subnet)
    name = instance["Instances"][0]["InstanceId"]
    return {
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "spec": {"providerID": f"aws:///{zone}/{name}"},
        "subnet": subnet,
    }


def _team_file_system(efs: Any, subnet: str) -> tuple[str, str]:
    made = efs.create_file_system(CreationToken="t", Encrypted=True)
    fs = made["FileSystemId"]
    policy = file_system_policy(made["FileSystemArn"], "arn:aws:iam::123456789012:role/csi", "*")
    efs.put_file_system_policy(FileSystemId=fs, Policy=json.dumps(policy))
    efs.create_mount_target(FileSystemId=fs, SubnetId=subnet)
    point = efs.create_access_point(
        ClientToken="team",
        FileSystemId=fs,
        PosixUser={"Uid": 1081, "Gid": 1081},
        RootDirectory={"Path": "/team"},
    )["AccessPointId"]
    return fs, point


def _pv_and_pod(
    fs: str, point: str, pv_read_only: bool, claim_read_only: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    csi: dict[str, Any] = {"driver": "efs.csi.aws.com", "volumeHandle": f"{fs}::{point}"}
    if pv_read_only:
        csi["readOnly"] = True
    pv = {
        "metadata": {"name": "pv-team"},
        "spec": {"csi": csi, "mountOptions": ["tls", "iam"], "claimRef": {"name": "team"}},
    }
    claim: dict[str, Any] = {"claimName": "team"}
    if claim_read_only:
        claim["readOnly"] = True
    pod = {
        "metadata": {"uid": f"pod-{pv_read_only}-{claim_read_only}"},
        "spec": {"volumes": [{"name": "shared-team", "persistentVolumeClaim": claim}]},
    }
    return pv, pod


@pytest.mark.parametrize(
    ("pv_read_only", "claim_read_only", "read_only"),
    [(False, False, False), (True, False, True), (False, True, True), (True, True, True)],
)
def test_the_stand_in_mounts_read_only_when_the_volume_or_the_pods_claim_says_so(
    aws, pv_read_only, claim_read_only, read_only
):
    efs, ec2 = aws
    node = _node(ec2)
    fs, point = _team_file_system(efs, node["subnet"])
    pv, pod = _pv_and_pod(fs, point, pv_read_only, claim_read_only)
    driver = EfsCsiNode(efs, ec2)
    assert driver.mount_problem(pod, node, pv) is None
    assert f"{fs}::{point}" in driver.mounted[pod["metadata"]["uid"]]
    assert ((pod["metadata"]["uid"], f"{fs}::{point}") in driver.read_only) is read_only


def test_the_team_volume_gets_the_personal_ones_checks(aws):
    efs, ec2 = aws
    node = _node(ec2)
    fs, point = _team_file_system(efs, node["subnet"])
    efs.delete_access_point(AccessPointId=point)
    pv, pod = _pv_and_pod(fs, point, True, True)
    problem = EfsCsiNode(efs, ec2).mount_problem(pod, node, pv)
    assert problem is not None and f"Failed to find access point {point}" in problem


def test_moto_answers_an_empty_file_systems_metered_size_as_of_its_creation(aws):
    efs, _ = aws
    made = efs.create_file_system(CreationToken="m", Encrypted=True)
    fs = made["FileSystemId"]
    first = file_system_usage(efs, fs)
    assert first is not None
    assert first.metered_bytes == moto_efs.EMPTY_METERED_BYTES == 6144
    assert first.metered_at == made["CreationTime"]  # not the moment of the call
    assert file_system_usage(efs, fs) == first
    moto_efs.meter(fs, 5 * 2**30, made["CreationTime"].timestamp() + 3600)
    metered = file_system_usage(efs, fs)
    assert metered is not None and metered.metered_bytes == 5 * 2**30
    assert metered.scope == "file system"
    assert (metered.metered_at - made["CreationTime"]).total_seconds() == 3600


def test_no_usage_when_efs_does_not_answer(aws):
    efs, _ = aws
    assert file_system_usage(efs, "fs-00000000000000000") is None


def test_the_size_seam_wraps_a_property_moto_still_has():
    from moto.efs.models import FileSystem

    assert isinstance(moto_efs._MOTO_SIZE, property)
    uninstall = moto_efs.install()
    uninstall()
    assert FileSystem.size_in_bytes is moto_efs._MOTO_SIZE


# -- what the CLI says -----------------------------------------------------------------


def test_disk_lists_lines_label_the_figure_as_the_whole_file_systems():
    shares = {
        "personal": {
            "mount_path": "/shared-personal",
            "access_point_id": "fsap-1",
            "usage": {
                "file_system_id": FS,
                "metered_bytes": 5 * 2**30,
                "metered_at": "2026-11-28T00:10:00Z",
                "scope": "file system",
            },
        },
        "team": {"mount_path": "/shared", "mode": "ro"},
    }
    lines = share_lines(shares)
    assert lines[0] == "Personal share /shared-personal: access point fsap-1."
    assert "5.0 GiB on file system fs-0123456789abcdef0 (the whole file system" in lines[1]
    assert "EFS meters no access point alone" in lines[1]
    assert lines[2] == "Team share /shared: read-only."
    unknown = share_lines({**shares, "personal": {**shares["personal"], "usage": None}})
    assert unknown[1] == "  Usage: unknown (EFS did not answer)."
    none = share_lines({"personal": None, "team": None})
    assert none == ["Personal share: none (the deployment has no shared file system)."]
    assert size(6144) == "6.0 KiB" and size(12) == "12 B"
