"""The DescribeSnapshots seam (localcloud/moto_ebs.py): `OwnerIds` scopes the answer as EC2
does, and moto's method still has the shape the seam wraps."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from localcloud import moto_ebs

REGION = "us-east-2"
OTHER_ACCOUNT = "111122223333"


@pytest.fixture
def ec2() -> Iterator[Any]:
    with mock_aws():
        uninstall = moto_ebs.install()
        try:
            yield boto3.client("ec2", region_name=REGION)
        finally:
            uninstall()


def _snapshot(ec2: Any, tags: dict[str, str]) -> str:
    volume = ec2.create_volume(AvailabilityZone=f"{REGION}a", Size=1)["VolumeId"]
    tagged = [{"Key": k, "Value": v} for k, v in tags.items()]
    spec = [{"ResourceType": "snapshot", "Tags": tagged}] if tagged else []
    return str(ec2.create_snapshot(VolumeId=volume, TagSpecifications=spec)["SnapshotId"])


def _ids(answer: dict[str, Any]) -> set[str]:
    return {s["SnapshotId"] for s in answer["Snapshots"]}


def test_moto_describe_snapshots_has_the_shape_the_seam_wraps():
    assert moto_ebs.seam_signature() == moto_ebs.EXPECTED_SIGNATURE


def test_owner_self_returns_the_callers_snapshots_only_not_the_public_ones(ec2: Any):
    mine = _snapshot(ec2, {"gpu-dev-user": "alice"})
    everyone = _ids(ec2.describe_snapshots())
    assert mine in everyone and len(everyone) > 1  # moto's public snapshots are there

    assert _ids(ec2.describe_snapshots(OwnerIds=["self"])) == {mine}


def test_owner_scope_and_filters_both_apply(ec2: Any):
    alice = _snapshot(ec2, {"gpu-dev-user": "alice"})
    _snapshot(ec2, {"gpu-dev-user": "bob"})
    _snapshot(ec2, {"other": "x"})
    by_user = [{"Name": "tag:gpu-dev-user", "Values": ["alice"]}]
    tagged = [{"Name": "tag-key", "Values": ["gpu-dev-user"]}]

    assert _ids(ec2.describe_snapshots(OwnerIds=["self"], Filters=by_user)) == {alice}
    assert len(_ids(ec2.describe_snapshots(OwnerIds=["self"], Filters=tagged))) == 2


def test_an_account_id_scopes_to_that_account(ec2: Any):
    mine = _snapshot(ec2, {})
    own_account = boto3.client("sts", region_name=REGION).get_caller_identity()["Account"]

    assert _ids(ec2.describe_snapshots(OwnerIds=[own_account])) == {mine}
    assert _ids(ec2.describe_snapshots(OwnerIds=[OTHER_ACCOUNT])) == set()


def test_snapshot_ids_outside_the_scope_are_left_out_and_unknown_ids_still_fail(ec2: Any):
    mine = _snapshot(ec2, {})
    public = next(iter(_ids(ec2.describe_snapshots()) - {mine}))

    assert _ids(ec2.describe_snapshots(OwnerIds=["self"], SnapshotIds=[mine, public])) == {mine}
    with pytest.raises(ec2.exceptions.ClientError, match=r"InvalidSnapshot\.NotFound"):
        ec2.describe_snapshots(OwnerIds=["self"], SnapshotIds=["snap-0123456789abcdef0"])


def test_an_owner_alias_is_left_unscoped_as_moto_answers_it(ec2: Any):
    assert moto_ebs.owners_of(["amazon"], "123456789012") is None
    assert moto_ebs.owners_of(["self", "amazon"], "123456789012") is None
    assert moto_ebs.owners_of([], "123456789012") is None
    assert moto_ebs.owners_of(["self", OTHER_ACCOUNT], "123456789012") == {
        "123456789012",
        OTHER_ACCOUNT,
    }
    assert len(_ids(ec2.describe_snapshots(OwnerIds=["amazon"]))) > 1


def test_uninstall_restores_moto(ec2: Any):
    moto_ebs.install()()  # a second install's uninstall puts moto's own method back
    from moto.ec2.responses.elastic_block_store import ElasticBlockStore

    assert ElasticBlockStore.describe_snapshots is moto_ebs._MOTO_DESCRIBE
