from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Match, Template

from tests.support.templates import function_of_service


def _policy_actions(template: Template, function_id: str) -> dict[str, Any]:
    role = _function_role(template, function_id)
    statements: dict[str, Any] = {}
    for policy in template.find_resources("AWS::IAM::Policy").values():
        if {"Ref": role} in policy["Properties"]["Roles"]:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions = statement["Action"]
                for action in actions if isinstance(actions, list) else [actions]:
                    statements[action] = statement["Resource"]
    return statements


def _function_role(template: Template, function_id: str) -> str:
    function = template.to_json()["Resources"][function_id]
    return str(function["Properties"]["Role"]["Fn::GetAtt"][0])


def test_both_reconcilers_run_every_five_minutes(template: Template):
    rules = template.find_resources("AWS::Events::Rule")
    schedules = {
        r["Properties"]["Targets"][0]["Arn"]["Fn::GetAtt"][0]: r["Properties"]["ScheduleExpression"]
        for r in rules.values()
        if "ScheduleExpression" in r["Properties"]
    }
    assert (
        schedules[function_of_service(template, "gpudev-availability-updater")[0]]
        == "rate(1 minute)"
    )
    assert (
        schedules[function_of_service(template, "gpudev-disk-reconciler")[0]] == "rate(5 minutes)"
    )


def test_disk_reconciler_never_runs_twice_at_once(template: Template):
    _, props = function_of_service(template, "gpudev-disk-reconciler")
    assert props["ReservedConcurrentExecutions"] == 1


def test_reconcilers_get_the_seeds_permissions_and_no_more(template: Template):
    availability_id, availability = function_of_service(template, "gpudev-availability-updater")
    disks_id, _ = function_of_service(template, "gpudev-disk-reconciler")
    availability_actions = _policy_actions(template, availability_id)
    disk_actions = _policy_actions(template, disks_id)
    assert availability_actions["autoscaling:DescribeAutoScalingGroups"] == "*"
    assert "eks:DescribeCluster" in availability_actions
    assert availability_actions["eks:DescribeCluster"] != "*", "scoped to our cluster"
    assert {a for a in disk_actions if a.startswith("ec2:")} == {
        "ec2:DescribeVolumes",
        "ec2:DescribeSnapshots",
        "ec2:DescribeInstances",
    }
    # the availability updater's CreateTags: only within AllocateAddress, the EFA nodes'
    # Elastic IPs (exactly checked in test_node_address_grants.py)
    availability_writes = {a for a in availability_actions if a != "ec2:CreateTags"}
    assert not any(
        a.startswith(("ec2:Create", "ec2:Delete", "autoscaling:Set"))
        for a in availability_writes | set(disk_actions)
    )
    assert availability["Environment"]["Variables"]["EKS_CLUSTER_NAME"] == (
        "pytorch-gpu-dev-cluster"
    )


def test_the_availability_updater_has_a_kubernetes_identity(template: Template):
    template.has_resource_properties(
        "AWS::EKS::AccessEntry",
        {"ClusterName": "pytorch-gpu-dev-cluster", "KubernetesGroups": ["gpu-dev-availability"]},
    )


def test_the_availability_updater_gets_the_pre_pullers_settings(template: Template):
    """Its no-op from the tools image (none in cdk.json: the pre-puller is off), the default
    image first, and the days and count of the most used images (docs/images.md)."""
    variables = function_of_service(template, "gpudev-availability-updater")[1]["Environment"][
        "Variables"
    ]
    assert variables["PREPULLER_TOOLS_IMAGE"] == ""
    assert variables["PREPULLER_DAYS"] == "14"
    assert variables["PREPULLER_IMAGES"] == "3"
    assert variables["LIFECYCLE_POD_IMAGE"] == "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"


def test_errors_raise_alarms(template: Template):
    alarms = template.find_resources(
        "AWS::CloudWatch::Alarm",
        {"Properties": {"MetricName": "Errors", "Threshold": 0, "Period": 300}},
    )
    alarmed = {a["Properties"]["Dimensions"][0]["Value"]["Ref"] for a in alarms.values()}
    assert {
        function_of_service(template, "gpudev-availability-updater")[0],
        function_of_service(template, "gpudev-disk-reconciler")[0],
    } <= alarmed
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {"Dimensions": Match.array_with([Match.object_like({"Name": "FunctionName"})])},
    )
