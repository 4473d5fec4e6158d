"""Named disks are deployable: the functions that make, snapshot and delete a disk's EBS
volume (the reservation tasks; the sweeper, for executions that died) hold exactly those
EC2 actions, each scoped by the disk's reservation tag where EC2 allows it; and the
lifecycle's Kubernetes group may manage PersistentVolumes and claims (deploy/kubernetes/
rbac.yaml, read here; the local cloud also enforces it, tests/e2e/test_cluster_access.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_cdk.assertions import Template

from cdk_app.declaration import DISK_ADOPTION_TAG_KEYS, DISK_RESERVATION_TAG
from gpudev.disks.ebs import ADOPTED_TAG, RESERVATION_TAG, USER_TAG

ROOT = Path(__file__).resolve().parents[2]
# both tags a reservation writes at creation: reservation-id alone is a common key
TAGGED = {
    "StringLike": {f"ec2:ResourceTag/{RESERVATION_TAG}": "*", f"ec2:ResourceTag/{USER_TAG}": "*"}
}
TAGGING = {
    "StringLike": {f"aws:RequestTag/{RESERVATION_TAG}": "*", f"aws:RequestTag/{USER_TAG}": "*"}
}
EKS_NODE = {"StringEquals": {"ec2:ResourceTag/eks:cluster-name": "pytorch-gpu-dev-cluster"}}
# a disk's earlier snapshots: ours, imported ones too (made before the reservation tag)
OURS = {"Null": {f"aws:ResourceTag/{USER_TAG}": "false"}}


def _ec2_statements(template: Template, service_name: str) -> list[dict[str, Any]]:
    (function_id,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"POWERTOOLS_SERVICE_NAME": service_name}}}},
    )
    resources = template.to_json()["Resources"]
    role = resources[function_id]["Properties"]["Role"]["Fn::GetAtt"][0]
    found = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions = statement["Action"]
                actions = actions if isinstance(actions, list) else [actions]
                # cdk.json's minimizePolicies merges statements of one resource and condition
                # (ec2:Describe* and X-Ray's actions on "*"): keep the EC2 actions only.
                ec2 = [a for a in actions if a.startswith("ec2:")]
                if ec2:
                    found.append({**statement, "Action": ec2})
    return found


def _kind(resource: Any) -> str:
    """volume, snapshot or instance, from an ARN rendered with Fn::Join."""
    text = resource if isinstance(resource, str) else str(resource["Fn::Join"][1])
    if ":instance/" in text:
        return "instance"
    return "snapshot" if ":snapshot/" in text or "::snapshot/" in text else "volume"


def test_the_declared_tag_is_the_one_the_layer_writes():
    assert DISK_RESERVATION_TAG == RESERVATION_TAG
    assert DISK_ADOPTION_TAG_KEYS == (RESERVATION_TAG, ADOPTED_TAG)


@pytest.mark.parametrize("service", ["gpudev-reservation-tasks", "gpudev-sweeper"])
def test_the_disk_functions_hold_exactly_the_ec2_actions_they_call_scoped_by_tag(
    template: Template, service: str
):
    granted: dict[tuple[str, str], list[Any]] = {}
    for statement in _ec2_statements(template, service):
        resources = statement["Resource"]
        for action in statement["Action"]:
            for resource in resources if isinstance(resources, list) else [resources]:
                kind = "*" if resource == "*" else _kind(resource)
                granted.setdefault((action, kind), []).append(statement.get("Condition"))
    creating = {"StringEquals": {"ec2:CreateAction": ["CreateVolume", "CreateSnapshot"]}}
    # a disk's existing volume (imported, ours) adopted by the reservation taking it
    adopting = {
        **OURS,
        "ForAllValues:StringEquals": {"aws:TagKeys": [RESERVATION_TAG, ADOPTED_TAG]},
    }
    assert granted == {
        ("ec2:DescribeVolumes", "*"): [None],  # Describe* takes no resource-level scoping
        ("ec2:DescribeSnapshots", "*"): [None],
        ("ec2:CreateVolume", "volume"): [TAGGING],
        ("ec2:CreateVolume", "snapshot"): [OURS],  # only from a snapshot of ours
        ("ec2:CreateSnapshot", "volume"): [TAGGED],
        ("ec2:CreateSnapshot", "snapshot"): [TAGGING],
        ("ec2:CreateTags", "volume"): [creating, adopting],
        ("ec2:CreateTags", "snapshot"): [creating],
        ("ec2:DeleteVolume", "volume"): [TAGGED],
        ("ec2:DeleteSnapshot", "snapshot"): [TAGGED],
        # a volume saved while attached to a hung node, forced off it: ours, from an EKS node
        ("ec2:DetachVolume", "volume"): [TAGGED],
        ("ec2:DetachVolume", "instance"): [EKS_NODE],
    }


def test_the_jobs_consumer_copies_only_our_snapshots_into_tagged_ones(template: Template):
    """A disk clone's copy (gpudev/disks/clone.py): from a snapshot of ours, into one tagged
    at creation, tags only while copying; its tag changes stay as they were."""
    granted: dict[tuple[str, str], list[Any]] = {}
    for statement in _ec2_statements(template, "gpudev-jobs-consumer"):
        resources = statement["Resource"]
        for action in statement["Action"]:
            if action in ("ec2:CopySnapshot",) or (
                action == "ec2:CreateTags" and "ec2:CreateAction" in str(statement)
            ):
                for resource in resources if isinstance(resources, list) else [resources]:
                    granted.setdefault((action, _kind(resource)), []).append(
                        statement.get("Condition")
                    )
    copying = {"StringEquals": {"ec2:CreateAction": "CopySnapshot"}}
    assert granted == {
        ("ec2:CopySnapshot", "snapshot"): [OURS, TAGGING],
        ("ec2:CreateTags", "snapshot"): [copying],
    }


def _rbac() -> list[dict[str, Any]]:
    text = (ROOT / "deploy" / "kubernetes" / "rbac.yaml").read_text()
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _rules_of_group(group: str) -> dict[tuple[str | None, str], set[str]]:
    """(namespace or None for cluster-wide, resource) → verbs the group is bound to."""
    documents = _rbac()
    roles = {
        (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d for d in documents
    }
    allowed: dict[tuple[str | None, str], set[str]] = {}
    for binding in documents:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(s["kind"] == "Group" and s["name"] == group for s in binding["subjects"]):
            continue
        namespace = binding["metadata"].get("namespace")
        ref = binding["roleRef"]
        role = roles[(ref["kind"], namespace if ref["kind"] == "Role" else None, ref["name"])]
        for rule in role["rules"]:
            for resource in rule["resources"]:
                allowed.setdefault((namespace, resource), set()).update(rule["verbs"])
    return allowed


def test_the_lifecycle_group_manages_persistent_volumes_and_claims_and_reads_nodes():
    allowed = _rules_of_group("gpu-dev-lifecycle")
    # PersistentVolumes are cluster-scoped: a ClusterRole bound cluster-wide.
    assert allowed[(None, "persistentvolumes")] == {"get", "list", "create", "delete"}
    assert {"get", "list"} <= allowed[(None, "nodes")], "the zone of node 0"
    for namespace in ("gpu-dev", "gpu-dev-profiling", "gpu-dev-docker"):
        assert allowed[(namespace, "persistentvolumeclaims")] == {
            "get",
            "list",
            "create",
            "delete",
        }
    assert not any("exec" in resource for _, resource in allowed), "no pods/exec"
    assert not any("*" in verbs for verbs in allowed.values())


def test_the_lifecycle_group_may_only_get_pod_logs_in_its_namespaces():
    """A failed start's log tail (gpudev/cluster/failure_log.py): `get` on pods/log, in the
    three dev namespaces, nothing more; the readers' group may not read logs."""
    allowed = _rules_of_group("gpu-dev-lifecycle")
    logs = {place: verbs for place, verbs in allowed.items() if place[1] == "pods/log"}
    namespaces = ("gpu-dev", "gpu-dev-profiling", "gpu-dev-docker")
    assert logs == {(namespace, "pods/log"): {"get"} for namespace in namespaces}
    assert not any("log" in resource for _, resource in _rules_of_group("gpu-dev-readers"))
