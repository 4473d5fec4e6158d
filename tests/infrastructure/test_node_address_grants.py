"""The availability updater gives each EFA node an Elastic IP (gpudev/cluster/addresses.py)
and holds exactly the EC2 actions that needs: an address is allocated only with our tag,
tagged only while allocating, associated and released only when it carries our tag."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Template

from cdk_app.declaration import NODE_ADDRESS_TAG
from gpudev.cluster.addresses import INSTANCE_TAG
from tests.infrastructure.test_disk_grants import _ec2_statements

OURS = {"Null": {f"aws:ResourceTag/{INSTANCE_TAG}": "false"}}


def test_the_declared_tag_is_the_one_the_layer_writes() -> None:
    assert NODE_ADDRESS_TAG == INSTANCE_TAG


def _kind(resource: Any) -> str:
    text = resource if isinstance(resource, str) else str(resource["Fn::Join"][1])
    for kind in ("elastic-ip", "network-interface"):
        if f":{kind}/" in text:
            return kind
    return "*" if resource == "*" else text


def test_the_availability_updater_holds_exactly_the_address_actions_scoped_by_tag(
    template: Template,
) -> None:
    granted: dict[tuple[str, str], list[Any]] = {}
    for statement in _ec2_statements(template, "gpudev-availability-updater"):
        resources = statement["Resource"]
        for action in statement["Action"]:
            for resource in resources if isinstance(resources, list) else [resources]:
                granted.setdefault((action, _kind(resource)), []).append(statement.get("Condition"))
    allocating = {
        "Null": {f"aws:RequestTag/{INSTANCE_TAG}": "false"},
        "ForAllValues:StringEquals": {"aws:TagKeys": INSTANCE_TAG},
    }
    assert granted == {
        ("ec2:DescribeAddresses", "*"): [None],  # Describe* takes no resource-level scoping
        ("ec2:DescribeInstances", "*"): [None],
        ("ec2:AllocateAddress", "elastic-ip"): [allocating],
        ("ec2:CreateTags", "elastic-ip"): [
            {"StringEquals": {"ec2:CreateAction": "AllocateAddress"}}
        ],
        ("ec2:AssociateAddress", "elastic-ip"): [OURS],
        ("ec2:ReleaseAddress", "elastic-ip"): [OURS],
        # the node's primary interface, made by EC2 with the instance: nothing of ours on it
        ("ec2:AssociateAddress", "network-interface"): [None],
    }
