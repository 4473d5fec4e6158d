"""One declaration, two renderers: what CDK synthesizes and what the local cloud created
from the same deployment declaration must match (functions and their handlers, queues and
their redrive, state machines and their placeholders, schedules and their targets, the
API's public routes)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from localcloud.stack import LocalCloud
from tests.support.api import ApiClient
from tests.support.certificates import synth_context

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cdk_template(local_cloud: LocalCloud, tmp_path_factory: pytest.TempPathFactory) -> dict:
    os.environ["PATH"] = f"{ROOT / 'node_modules' / '.bin'}{os.pathsep}{os.environ['PATH']}"
    import aws_cdk as cdk

    from cdk_app.stack import GpuDevStack

    app = cdk.App(
        outdir=str(tmp_path_factory.mktemp("parity.out")),
        context=synth_context(tmp_path_factory.mktemp("certs")),
    )
    GpuDevStack(app, "Parity", deployment=local_cloud.deployment)
    assembly = app.synth()
    return assembly.get_stack_by_name("Parity").template  # type: ignore[no-any-return]


def _resources(template: dict, kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]


def _declared_functions(cloud: LocalCloud) -> set[tuple[str, str, int, int]]:
    return {
        (spec.deployed_name, spec.handler, spec.memory_mb, spec.timeout_seconds)
        for spec in cloud.deployment.functions
    }


def test_functions_match(local_cloud: LocalCloud, cdk_template: dict):
    cdk_functions = {
        (
            f["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"],
            f["Handler"],
            f["MemorySize"],
            f["Timeout"],
        )
        for f in _resources(cdk_template, "AWS::Lambda::Function")
        if "POWERTOOLS_SERVICE_NAME" in f.get("Environment", {}).get("Variables", {})
    }
    lambda_ = local_cloud.aws.client("lambda")  # type: ignore[union-attr]
    local_functions = {
        (f["FunctionName"], f["Handler"], f["MemorySize"], f["Timeout"])
        for f in lambda_.list_functions()["Functions"]
    }
    assert cdk_functions == local_functions == _declared_functions(local_cloud)


def test_queues_and_their_redrive_match(local_cloud: LocalCloud, cdk_template: dict):
    cdk_queues = {
        (
            q["QueueName"],
            q.get("VisibilityTimeout"),
            q.get("RedrivePolicy", {}).get("maxReceiveCount"),
        )
        for q in _resources(cdk_template, "AWS::SQS::Queue")
    }
    sqs = local_cloud.aws.client("sqs")  # type: ignore[union-attr]
    local_queues = set()
    for url in sqs.list_queues().get("QueueUrls", []):
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        redrive = json.loads(attributes.get("RedrivePolicy", "{}"))
        local_queues.add(
            (
                url.rsplit("/", 1)[1],
                int(attributes["VisibilityTimeout"]) if "RedrivePolicy" in attributes else None,
                redrive.get("maxReceiveCount"),
            )
        )
    assert cdk_queues == local_queues
    mappings = _resources(cdk_template, "AWS::Lambda::EventSourceMapping")
    assert {
        (
            m["BatchSize"],
            tuple(m["FunctionResponseTypes"]),
            m.get("ScalingConfig", {}).get("MaximumConcurrency"),
        )
        for m in mappings
    } == {
        (q.batch_size, ("ReportBatchItemFailures",), q.max_concurrency)
        for q in local_cloud.deployment.queues
        if q.consumer
    }
    # the local cloud's pollers take no more batches at once than the mapping allows
    for poller in local_cloud.pollers.values():
        cap = poller.spec.max_concurrency
        assert cap is None or len(poller._threads) <= cap


def test_state_machines_and_placeholders_match(local_cloud: LocalCloud, cdk_template: dict):
    machines = _resources(cdk_template, "AWS::StepFunctions::StateMachine")
    cdk_machines = {
        (m["StateMachineName"], tuple(sorted(m.get("DefinitionSubstitutions", {}))))
        for m in machines
    }
    declared = {
        (f"gpudev-{spec.name.lower()}", tuple(sorted(spec.placeholders())))
        for spec in local_cloud.deployment.state_machines
    }
    sfn = local_cloud.aws.client("stepfunctions")  # type: ignore[union-attr]
    local_machines = set()
    for machine in sfn.list_state_machines()["stateMachines"]:
        definition = sfn.describe_state_machine(stateMachineArn=machine["stateMachineArn"])[
            "definition"
        ]
        assert "${" not in definition, "every placeholder substituted locally"
        local_machines.add(machine["name"])
    assert cdk_machines == declared
    assert local_machines == {name for name, _ in declared}
    for spec in local_cloud.deployment.state_machines:
        assert set(spec.functions) == spec.placeholders(), spec.definition


def test_schedules_match(local_cloud: LocalCloud, cdk_template: dict):
    cdk_rules = {
        r["ScheduleExpression"]
        for r in _resources(cdk_template, "AWS::Events::Rule")
        if "ScheduleExpression" in r
    }
    events = local_cloud.aws.client("events")  # type: ignore[union-attr]
    local_rules = {r["ScheduleExpression"] for r in events.list_rules()["Rules"]}
    assert cdk_rules == local_rules == {s.expression for s in local_cloud.deployment.schedules}


def test_event_buses_and_their_rules_match(local_cloud: LocalCloud, cdk_template: dict):
    deployment = local_cloud.deployment
    cdk_buses = {b["Name"] for b in _resources(cdk_template, "AWS::Events::EventBus")}
    declared_buses = {bus.bus_name for bus in deployment.event_buses}
    events = local_cloud.aws.client("events")  # type: ignore[union-attr]
    local_buses = {b["Name"] for b in events.list_event_buses()["EventBuses"]} - {"default"}
    assert cdk_buses == local_buses == declared_buses
    cdk_rules = {
        (r["Name"], json.dumps(r["EventPattern"], sort_keys=True))
        for r in _resources(cdk_template, "AWS::Events::Rule")
        if "EventPattern" in r
    }
    local_rules = {
        (r["Name"], json.dumps(json.loads(r["EventPattern"]), sort_keys=True))
        for bus in declared_buses
        for r in events.list_rules(EventBusName=bus)["Rules"]
    }
    declared_rules = {
        (rule.deployed_name, json.dumps(rule.event_pattern(), sort_keys=True))
        for rule in deployment.bus_rules
    }
    assert cdk_rules == local_rules == declared_rules


def _api_methods(template: dict) -> set[tuple[str, str, str]]:
    """(method, path, authorization) of every API Gateway method, each path rebuilt from
    its resource's chain of parents up to the root."""
    resources = {
        logical_id: r["Properties"]
        for logical_id, r in template["Resources"].items()
        if r["Type"] == "AWS::ApiGateway::Resource"
    }

    def path(resource_id: dict[str, Any]) -> str:
        if "Ref" not in resource_id:  # Fn::GetAtt [RestApi, RootResourceId]
            return ""
        resource = resources[resource_id["Ref"]]
        return f"{path(resource['ParentId'])}/{resource['PathPart']}"

    return {
        (m["HttpMethod"], path(m["ResourceId"]) or "/", m["AuthorizationType"])
        for m in _resources(template, "AWS::ApiGateway::Method")
    }


def test_public_routes_match(local_cloud: LocalCloud, cdk_template: dict, api: ApiClient):
    """Only the declared public routes go without IAM auth in CDK; their paths carry no
    other method there, and the local gateway answers the same: the public routes without a
    signature, any other method on their paths 403 as an unknown route."""
    declared = set(local_cloud.deployment.api.public_routes)
    assert declared == {("GET", "/health")}
    methods = _api_methods(cdk_template)
    assert {(m, p) for m, p, auth in methods if auth == "NONE"} == declared
    assert {(m, p) for m, p, auth in methods if auth != "NONE"} == {
        ("ANY", "/"),
        ("ANY", "/{proxy+}"),
    }
    assert {auth for _, _, auth in methods} == {"NONE", "AWS_IAM"}
    public_paths = {path for _, path in declared}
    assert {(m, p) for m, p, _ in methods if p in public_paths} == declared
    for path in public_paths:
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            reply = api.send(method, path, {})
            if (method, path) in declared:
                assert reply.status == 200, (method, path)
            else:
                assert (reply.status, reply.body) == (
                    403,
                    {"message": "Missing Authentication Token"},
                ), (method, path)
