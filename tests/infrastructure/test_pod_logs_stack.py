"""The dev pods' log group is deployable and scoped (cdk_app/logs.py): its retention from
`gpudev:podLogRetentionDays`, encrypted with a key the CloudWatch Logs service may use for
this group only; Fluent Bit's role (EKS Pod Identity, its namespace and service account
as deploy/kubernetes/fluent-bit.yaml runs it) may only create streams and put events there;
the API may only read it, and no other function holds a logs action on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_cdk.assertions import Match, Template

from cdk_app.declaration import POD_LOG_GROUP
from cdk_app.logs import (
    DEFAULT_RETENTION_DAYS,
    POD_LOG_RETENTION_CONTEXT,
    SHIPPER_NAMESPACE,
    SHIPPER_SERVICE_ACCOUNT,
    retention_days,
)

ROOT = Path(__file__).resolve().parents[2]
READS = {"logs:DescribeLogStreams", "logs:FilterLogEvents"}


def _text(value: Any) -> str:
    return json.dumps(value)


def _statements_on_pod_logs(template: Template) -> list[tuple[Any, dict[str, Any]]]:
    """(the roles, the statement) of every policy statement naming the pods' group."""
    found = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if POD_LOG_GROUP in _text(statement.get("Resource")):
                found.append((policy["Properties"]["Roles"], statement))
    return found


def _role_of_function(template: Template, service_name: str) -> str:
    (function_id,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"POWERTOOLS_SERVICE_NAME": service_name}}}},
    )
    function = template.to_json()["Resources"][function_id]
    return str(function["Properties"]["Role"]["Fn::GetAtt"][0])


def test_the_group_keeps_lines_for_the_default_retention_encrypted_and_retained(template):
    (group,) = template.find_resources(
        "AWS::Logs::LogGroup", {"Properties": {"LogGroupName": POD_LOG_GROUP}}
    ).values()
    assert group["Properties"]["RetentionInDays"] == DEFAULT_RETENTION_DAYS
    assert group["DeletionPolicy"] == "Retain"
    key_ref = group["Properties"]["KmsKeyId"]["Fn::GetAtt"]
    key = template.to_json()["Resources"][key_ref[0]]
    assert key["Type"] == "AWS::KMS::Key" and key["Properties"]["EnableKeyRotation"] is True
    logs_statements = [
        s
        for s in key["Properties"]["KeyPolicy"]["Statement"]
        if "logs." in _text(s.get("Principal"))
    ]
    (statement,) = logs_statements
    condition = statement["Condition"]["ArnEquals"]["kms:EncryptionContext:aws:logs:arn"]
    assert f"log-group:{POD_LOG_GROUP}" in _text(condition)
    assert not _text(condition).endswith('*"]}')  # this group, not a pattern


def test_the_api_reads_the_group_and_only_it_and_has_its_name(template):
    api_role = _role_of_function(template, "gpudev-api")
    on_group = _statements_on_pod_logs(template)
    api = [s for roles, s in on_group if {"Ref": api_role} in roles]
    assert len(api) == 1
    actions = api[0]["Action"] if isinstance(api[0]["Action"], list) else [api[0]["Action"]]
    assert set(actions) == READS
    assert _text(api[0]["Resource"]).endswith(f':log-group:{POD_LOG_GROUP}:*"]]}}')
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Environment": {"Variables": Match.object_like({"POD_LOG_GROUP": POD_LOG_GROUP})}},
    )
    # No other function's role names the group; every other statement naming it is the
    # shipper's.
    others = [roles for roles, _ in on_group if {"Ref": api_role} not in roles]
    assert all(len(roles) == 1 and "PodLogShipperRole" in _text(roles) for roles in others)


def test_fluent_bits_role_may_only_write_streams_of_the_group_through_pod_identity(template):
    (association,) = template.find_resources("AWS::EKS::PodIdentityAssociation").values()
    props = association["Properties"]
    assert (props["Namespace"], props["ServiceAccount"]) == (
        SHIPPER_NAMESPACE,
        SHIPPER_SERVICE_ACCOUNT,
    )
    role_id = props["RoleArn"]["Fn::GetAtt"][0]
    role = template.to_json()["Resources"][role_id]
    trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert {s["Principal"]["Service"] for s in trust} == {"pods.eks.amazonaws.com"}
    statements = [
        statement
        for policy in template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    (statement,) = statements
    assert sorted(statement["Action"]) == ["logs:CreateLogStream", "logs:PutLogEvents"]
    assert _text(statement["Resource"]).endswith(f':log-group:{POD_LOG_GROUP}:*"]]}}')


def test_the_manifest_runs_fluent_bit_where_the_stack_gives_it_the_role():
    documents = list(yaml.safe_load_all((ROOT / "deploy/kubernetes/fluent-bit.yaml").read_text()))
    daemon_set = next(d for d in documents if d["kind"] == "DaemonSet")
    assert daemon_set["metadata"]["namespace"] == SHIPPER_NAMESPACE
    assert daemon_set["spec"]["template"]["spec"]["serviceAccountName"] == SHIPPER_SERVICE_ACCOUNT


class _Scope:
    def __init__(self, value: Any) -> None:
        self.node = self
        self._value = value

    def try_get_context(self, key: str) -> Any:
        assert key == POD_LOG_RETENTION_CONTEXT
        return self._value


@pytest.mark.parametrize(("raw", "days"), [(None, 30), ("90", 90), (365, 365), (" 7 ", 7)])
def test_the_retention_comes_from_context(raw, days):
    assert retention_days(_Scope(raw)) == days  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("10", "not a retention CloudWatch Logs takes"),
        ("a month", "a whole number of days"),
        (True, "a whole number of days"),
        ("-1", "a whole number of days"),
    ],
)
def test_a_retention_cloudwatch_does_not_take_is_refused_at_synth(raw, said):
    with pytest.raises(ValueError, match=said):
        retention_days(_Scope(raw))  # type: ignore[arg-type]
