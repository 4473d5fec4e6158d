"""The sweeper's function, schedule and grants, and the alarms that tell an operator the
lifecycle needed help: dead letters, executions that failed, timed out or were aborted,
sweeper repairs, function errors; all on one encrypted SNS topic."""

from __future__ import annotations

from typing import Any

from aws_cdk.assertions import Match, Template

from tests.infrastructure.test_reconcilers_stack import _policy_actions
from tests.support.templates import function_of_service


def _alarms(template: Template) -> dict[str, dict[str, Any]]:
    return {
        logical_id: alarm["Properties"]
        for logical_id, alarm in template.find_resources("AWS::CloudWatch::Alarm").items()
    }


def _alarm(template: Template, metric_name: str, namespace: str) -> dict[str, Any]:
    found = [
        props
        for props in _alarms(template).values()
        if props.get("MetricName") == metric_name and props.get("Namespace") == namespace
    ]
    assert len(found) == 1, f"one alarm on {namespace} {metric_name}, found {len(found)}"
    return found[0]


def _topic_id(template: Template) -> str:
    ((topic_id, _),) = template.find_resources("AWS::SNS::Topic").items()
    return topic_id


def test_the_sweeper_runs_every_five_minutes_one_run_at_a_time(template: Template):
    sweeper_id, props = function_of_service(template, "gpudev-sweeper")
    assert props["ReservedConcurrentExecutions"] == 1
    assert props["Handler"] == "handler.handler"
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(5 minutes)",
            "Targets": [Match.object_like({"Arn": {"Fn::GetAtt": [sweeper_id, "Arn"]}})],
        },
    )


def test_the_sweeper_may_read_executions_send_create_jobs_and_delete_objects(
    template: Template,
):
    sweeper_id, props = function_of_service(template, "gpudev-sweeper")
    actions = _policy_actions(template, sweeper_id)
    assert "states:ListExecutions" in actions and "states:DescribeExecution" in actions
    assert "sqs:SendMessage" in actions
    assert "states:StartExecution" not in actions, "it re-sends the job; the consumer starts"
    variables = props["Environment"]["Variables"]
    assert {"JOBS_QUEUE_URL", "RESERVATION_STATE_MACHINE_ARN", "EKS_CLUSTER_NAME"} <= set(variables)
    role = template.to_json()["Resources"][sweeper_id]["Properties"]["Role"]
    template.has_resource_properties(
        "AWS::EKS::AccessEntry",
        {"PrincipalArn": role, "KubernetesGroups": ["gpu-dev-lifecycle"]},
    )


def test_a_dead_letter_raises_an_alarm(template: Template):
    queues = template.find_resources("AWS::SQS::Queue").items()
    dead_letter_queues = {
        logical_id
        for logical_id, queue in queues
        if queue["Properties"].get("QueueName") in ("gpudev-jobs-dlq", "gpudev-notify-dlq")
    }
    alarms = [
        props
        for props in _alarms(template).values()
        if props.get("MetricName") == "ApproximateNumberOfMessagesVisible"
    ]
    assert {a["Dimensions"][0]["Value"]["Fn::GetAtt"][0] for a in alarms} == dead_letter_queues
    for alarm in alarms:
        assert alarm["Namespace"] == "AWS/SQS"
        assert alarm["Threshold"] == 0 and alarm["ComparisonOperator"] == "GreaterThanThreshold"
        assert alarm["AlarmActions"] == [{"Ref": _topic_id(template)}]


def test_executions_that_fail_time_out_or_are_aborted_raise_alarms(template: Template):
    for metric in ("ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"):
        alarm = _alarm(template, metric, "AWS/States")
        assert alarm["Dimensions"][0]["Name"] == "StateMachineArn"
        assert alarm["Statistic"] == "Sum" and alarm["Threshold"] == 0
        assert alarm["AlarmActions"] == [{"Ref": _topic_id(template)}]


def test_sweeper_repairs_raise_an_alarm(template: Template):
    alarm = _alarm(template, "SweeperRepairs", "GpuDev")
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "gpudev-sweeper"}]
    assert alarm["Threshold"] == 0 and alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["TreatMissingData"] == "notBreaching"


def test_reconciler_and_sweeper_errors_raise_alarms_that_notify(template: Template):
    errors = [p for p in _alarms(template).values() if p.get("MetricName") == "Errors"]
    alarmed = {p["Dimensions"][0]["Value"]["Ref"] for p in errors}
    for service in ("gpudev-sweeper", "gpudev-disk-reconciler", "gpudev-availability-updater"):
        assert function_of_service(template, service)[0] in alarmed
    topic = {"Ref": _topic_id(template)}
    assert all(p["AlarmActions"] == [topic] for p in _alarms(template).values())


def test_the_alarm_topic_is_encrypted_with_a_key_cloudwatch_may_use(template: Template):
    # The alarm topic's key (the pod logs' key: test_pod_logs_stack.py; the webhooks' key:
    # test_notifications_stack.py).
    ((key_id, key),) = template.find_resources(
        "AWS::KMS::Key", {"Properties": {"Description": "gpu-dev alarm notifications"}}
    ).items()
    assert key["Properties"]["EnableKeyRotation"] is True
    template.has_resource_properties(
        "AWS::SNS::Topic", {"KmsMasterKeyId": {"Fn::GetAtt": [key_id, "Arn"]}}
    )
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    assert any(
        s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
        and "kms:Decrypt" in s["Action"]
        for s in statements
    )


def test_the_dead_letter_queue_is_an_output_for_the_runbook(template: Template):
    outputs = template.to_json()["Outputs"]
    assert {"JobsDeadLetterQueueUrl", "JobsDeadLetterQueueArn", "JobsQueueArn"} <= set(outputs)
    assert "AlarmTopicArn" in outputs
