"""The disk purge and the jobs consumer's disk operations in the template: a daily
schedule, one run at a time, and EC2 changes only on our tagged volumes and snapshots
(`gpu-dev-user`), tag changes only to the disk's name and deletion tags."""

from __future__ import annotations

import json
import re
from typing import Any

from aws_cdk.assertions import Template

from tests.support.templates import function_of_service


def _statements(template: Template, function_id: str) -> list[dict[str, Any]]:
    function = template.to_json()["Resources"][function_id]
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    return [
        statement
        for policy in template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _ec2(statements: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found = {}
    for statement in statements:
        actions = statement["Action"]
        for action in actions if isinstance(actions, list) else [actions]:
            if action.startswith("ec2:"):
                found[action] = statement
    return found


def _resources(statement: dict[str, Any]) -> str:
    return str(statement["Resource"])


def test_the_purge_runs_daily_and_never_twice_at_once(template: Template):
    purge_id, props = function_of_service(template, "gpudev-disk-purge")
    schedules = {
        rule["Properties"]["Targets"][0]["Arn"]["Fn::GetAtt"][0]: rule["Properties"][
            "ScheduleExpression"
        ]
        for rule in template.find_resources("AWS::Events::Rule").values()
        if "ScheduleExpression" in rule["Properties"]
    }
    assert schedules[purge_id] == "rate(1 day)"
    assert props["ReservedConcurrentExecutions"] == 1
    assert props["Environment"]["Variables"]["DB_IAM_USER"] == "gpudev_purge_login"


def _connects_as(template: Template, service_name: str) -> list[str]:
    function_id, _ = function_of_service(template, service_name)
    users = []
    for statement in _statements(template, function_id):
        actions = statement["Action"]
        if "rds-db:connect" in (actions if isinstance(actions, list) else [actions]):
            users.append(re.findall(r"dbuser:[^/]*/(\w+)", json.dumps(statement["Resource"]))[0])
    return users


def test_the_purge_logs_in_as_its_own_role_and_the_reconcilers_cannot(template: Template):
    """Only the purge deletes disk rows (migrations/0017): its role may connect as
    gpudev_purge_login and nothing else, the reconcilers' roles never as it."""
    assert _connects_as(template, "gpudev-disk-purge") == ["gpudev_purge_login"]
    for reconciler in ("gpudev-disk-reconciler", "gpudev-availability-updater"):
        assert _connects_as(template, reconciler) == ["gpudev_reconcilers_login"]


def test_the_purge_deletes_only_our_snapshots_and_changes_nothing_else(template: Template):
    purge_id, props = function_of_service(template, "gpudev-disk-purge")
    statements = _statements(template, purge_id)
    ec2 = _ec2(statements)
    assert set(ec2) == {"ec2:DescribeSnapshots", "ec2:DescribeVolumes", "ec2:DeleteSnapshot"}
    deletes = [s for s in statements if "ec2:DeleteSnapshot" in str(s["Action"])]
    for delete in deletes:
        assert ":snapshot/*" in _resources(delete) and ":volume/" not in _resources(delete)
    # only our snapshots: marked for deletion by a disk job (the purge), or not (retention)
    assert sorted(json.dumps(d["Condition"], sort_keys=True) for d in deletes) == sorted(
        json.dumps(
            {"Null": {"aws:ResourceTag/gpu-dev-user": "false", "aws:ResourceTag/delete-date": v}},
            sort_keys=True,
        )
        for v in ("false", "true")
    )
    assert props["Environment"]["Variables"]["DISK_SNAPSHOT_RETENTION"] == "3"


def test_the_jobs_consumer_changes_only_the_disk_tags_of_our_volumes_and_snapshots(
    template: Template,
):
    consumer_id, _ = function_of_service(template, "gpudev-jobs-consumer")
    ec2 = _ec2(_statements(template, consumer_id))
    # CopySnapshot (and tags on the copy only): `disk clone` (tests/infrastructure/
    # test_disk_grants.py checks that grant)
    assert set(ec2) == {
        "ec2:DescribeVolumes",
        "ec2:DescribeSnapshots",
        "ec2:CreateTags",
        "ec2:DeleteTags",
        "ec2:CopySnapshot",
    }
    tagging = ec2["ec2:DeleteTags"]
    assert tagging is ec2["ec2:DeleteTags"]
    assert ":volume/*" in _resources(tagging) and ":snapshot/*" in _resources(tagging)
    # keys must be sent: ForAllValues alone is true of a DeleteTags without Tags (all tags)
    assert tagging["Condition"]["Null"] == {
        "aws:ResourceTag/gpu-dev-user": "false",
        "aws:TagKeys": "false",
    }
    keys = tagging["Condition"]["ForAllValues:StringEquals"]["aws:TagKeys"]
    assert "gpu-dev-user" not in keys
    assert set(keys) == {"disk_name", "disk-name", "Name", "delete-date", "marked-deleted-at"}
