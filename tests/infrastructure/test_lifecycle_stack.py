"""The lifecycle in CloudFormation: the state machine from the ASL file with logging and
tracing, the consumer on the jobs queue, the allocator every minute, and grants scoped to
the one state machine."""

from __future__ import annotations

import json
from pathlib import Path

from aws_cdk.assertions import Match, Template

from cdk_app.declaration import DEPLOYMENT
from localcloud.cluster_access import cluster_groups
from tests.infrastructure.test_reconcilers_stack import _policy_actions
from tests.support.templates import function_of_service


def _is_machine_arn(value: object) -> bool:
    """The reservation state machine's ARN, built from its name (Fn::Join in the template)."""
    text = json.dumps(value)
    return ":states:" in text and ':stateMachine:gpudev-reservation"' in text


def _machine(template: Template) -> dict:
    ((_, machine),) = template.find_resources(
        "AWS::StepFunctions::StateMachine",
        {"Properties": {"StateMachineName": "gpudev-reservation"}},
    ).items()
    return dict(machine["Properties"])


def test_the_state_machine_is_the_asl_file_with_logging_and_tracing(template: Template):
    props = _machine(template)
    assert props["TracingConfiguration"] == {"Enabled": True}
    assert props["LoggingConfiguration"]["Level"] == "ALL"  # test_telemetry.py: no data
    task_function = function_of_service(template, "gpudev-reservation-tasks")[0]
    assert props["DefinitionSubstitutions"]["ReservationTasksFunctionArn"] == {
        "Fn::GetAtt": [task_function, "Arn"]
    }
    definition = json.loads(Path("statemachines/reservation.asl.json").read_text())
    waits = [s for s in definition["States"].values() if s["Type"] in ("Wait", "Task")]
    assert all("Seconds" not in s and "TimeoutSeconds" not in s for s in waits)


def test_the_consumer_reads_the_jobs_queue_with_partial_batch_failures(template: Template):
    consumer = function_of_service(template, "gpudev-jobs-consumer")[0]
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "FunctionName": {"Ref": consumer},
            "FunctionResponseTypes": ["ReportBatchItemFailures"],
        },
    )
    actions = _policy_actions(template, consumer)
    assert _is_machine_arn(actions["states:StartExecution"])
    _, props = function_of_service(template, "gpudev-jobs-consumer")
    assert _is_machine_arn(props["Environment"]["Variables"]["RESERVATION_STATE_MACHINE_ARN"])


def test_token_senders_are_scoped_to_the_reservation_state_machine(template: Template):
    for service in (
        "gpudev-jobs-consumer",
        "gpudev-reservation-tasks",
        "gpudev-allocator",
        "gpudev-availability-updater",  # wakes a reservation whose pod is gone
    ):
        actions = _policy_actions(template, function_of_service(template, service)[0])
        assert _is_machine_arn(actions["states:SendTaskSuccess"]), service
    api = _policy_actions(template, function_of_service(template, "gpudev-api")[0])
    assert not any(action.startswith("states:") for action in api)


def test_the_allocator_runs_every_minute_and_tasks_have_their_cluster_group(template: Template):
    allocator = function_of_service(template, "gpudev-allocator")[0]
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "ScheduleExpression": "rate(1 minute)",
            "Targets": [Match.object_like({"Arn": {"Fn::GetAtt": [allocator, "Arn"]}})],
        },
    )
    entries = template.find_resources("AWS::EKS::AccessEntry")
    groups = sorted(e["Properties"]["KubernetesGroups"][0] for e in entries.values())
    # Lifecycle: the reservation tasks and the sweeper; readers: the allocator; the
    # availability updater has a group of its own (readers + the pre-puller's DaemonSet).
    assert groups.count("gpu-dev-lifecycle") == 2 and groups.count("gpu-dev-readers") == 1
    assert groups.count("gpu-dev-availability") == 1


def test_the_reservation_tasks_start_pods_from_the_pod_image_setting(template: Template):
    """CDK context `podImage` (cdk.json has none: the public PyTorch image, as in the local
    cloud); operators set it to the dev image they built (deploy/dev-image)."""
    _, props = function_of_service(template, "gpudev-reservation-tasks")
    variables = props["Environment"]["Variables"]
    assert variables["LIFECYCLE_POD_IMAGE"] == "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"


def test_the_local_clouds_access_entries_are_the_stacks(template: Template):
    """The local cluster's table (localcloud/cluster_access.py) and the stack's
    AWS::EKS::AccessEntry resources come from the same declaration: one entry per
    cluster-using function's role, in the same group."""
    entries = template.find_resources("AWS::EKS::AccessEntry")
    by_role = {
        json.dumps(e["Properties"]["PrincipalArn"]): e["Properties"]["KubernetesGroups"]
        for e in entries.values()
    }
    local = cluster_groups(DEPLOYMENT)
    assert len(local) == len(by_role)
    for deployed_name, group in local.items():
        _, props = function_of_service(template, deployed_name)
        assert by_role[json.dumps(props["Role"])] == [group], deployed_name
