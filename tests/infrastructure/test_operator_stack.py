"""The operators' surface in the template: the API function reads the jobs dead-letter queue
(its URL in `JOBS_DLQ_URL`; GetQueueAttributes and ReceiveMessage on that queue only, no
delete), and `ADMIN_ROLES` is rendered (empty by default; from context in test_api_access)."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Template


def _logical_id(template: Template, kind: str, properties: dict[str, Any]) -> str:
    ((logical_id, _),) = template.find_resources(kind, {"Properties": properties}).items()
    return logical_id


def _api_function(template: Template) -> tuple[str, dict[str, Any]]:
    ((logical_id, function),) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"POWERTOOLS_SERVICE_NAME": "gpudev-api"}}}},
    ).items()
    return logical_id, function


def test_the_api_reads_the_jobs_dead_letter_queue_and_nothing_else_of_it(template: Template):
    dlq = _logical_id(template, "AWS::SQS::Queue", {"QueueName": "gpudev-jobs-dlq"})
    _, api = _api_function(template)
    variables = api["Properties"]["Environment"]["Variables"]
    assert variables["JOBS_DLQ_URL"] == {"Ref": dlq}
    assert variables["ADMIN_ROLES"] == ""
    role = api["Properties"]["Role"]["Fn::GetAtt"][0]
    policies = template.find_resources(
        "AWS::IAM::Policy", {"Properties": {"Roles": [{"Ref": role}]}}
    )
    on_dlq = [
        statement
        for policy in policies.values()
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement["Resource"] == {"Fn::GetAtt": [dlq, "Arn"]}
    ]
    assert on_dlq == [
        {
            "Action": ["sqs:GetQueueAttributes", "sqs:ReceiveMessage"],
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [dlq, "Arn"]},
        }
    ]


def test_no_other_function_reads_the_dead_letters(template: Template):
    functions = template.find_resources("AWS::Lambda::Function")
    readers = [
        f["Properties"]["Environment"]["Variables"].get("POWERTOOLS_SERVICE_NAME")
        for f in functions.values()
        if "JOBS_DLQ_URL" in f["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert readers == ["gpudev-api"]
