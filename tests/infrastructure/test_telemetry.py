"""No secrets in telemetry, and the per-user limits in the API's environment: the state
machine logs events without execution data (inputs, outputs and parameters carry task
tokens), no function records its responses in X-Ray, no state passes a token on in its
output, and the limits come from CDK context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from aws_cdk.assertions import Template

from cdk_app.declaration import DEPLOYMENT
from tests.infrastructure.test_lifecycle_stack import _machine

ROOT = Path(__file__).resolve().parents[2]


def _functions(template: Template) -> dict[str, dict[str, str]]:
    """Our functions (not CDK's helpers), by service name: their environment."""
    found = {}
    for resource in template.find_resources("AWS::Lambda::Function").values():
        variables = resource["Properties"].get("Environment", {}).get("Variables", {})
        if "POWERTOOLS_SERVICE_NAME" in variables:
            found[variables["POWERTOOLS_SERVICE_NAME"]] = variables
    return found


def test_state_machine_logs_every_event_but_no_execution_data(template: Template):
    logging = _machine(template)["LoggingConfiguration"]
    assert logging["Level"] == "ALL"
    assert logging["IncludeExecutionData"] is False
    assert len(logging["Destinations"]) == 1


def test_no_function_records_its_responses_in_xray(template: Template):
    functions = _functions(template)
    assert len(functions) == len(DEPLOYMENT.functions)
    for name, variables in functions.items():
        assert variables.get("POWERTOOLS_TRACER_CAPTURE_RESPONSE") == "false", name


def test_task_tokens_go_only_to_the_task_that_parks_on_them():
    """`$$.Task.Token` is passed to a waitForTaskToken task (Step Functions records that in
    the execution history's TaskScheduled event); no state carries a token or a Jupyter
    value on in its output, so the history's state outputs hold none."""
    definition = json.loads((ROOT / "statemachines" / "reservation.asl.json").read_text())
    for name, state in definition["States"].items():
        text = json.dumps(state)
        assert "jupyter" not in text.lower(), name
        if "$$.Task.Token" in text:
            assert state["Resource"].endswith(".waitForTaskToken"), name
            assert state["Parameters"]["Payload"]["task_token.$"] == "$$.Task.Token", name
            assert "$$.Task.Token" not in json.dumps(
                {k: v for k, v in state.items() if k != "Parameters"}
            ), name
        for selector in ("ResultSelector", "OutputPath"):
            assert "token" not in json.dumps(state.get(selector, "")).lower(), name


def test_the_api_gets_the_user_limits_from_context_defaults(template: Template):
    api = _functions(template)["gpudev-api"]
    assert (api["MAX_LIVE_RESERVATIONS_PER_USER"], api["MAX_GPUS_PER_USER"]) == ("4", "32")
    assert "MAX_GPUS_PER_USER" not in _functions(template)["gpudev-jobs-consumer"]


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ({"maxLiveReservationsPerUser": 2, "maxGpusPerUser": "16"}, ("2", "16")),
        ({}, ("4", "32")),
    ],
)
def test_context_sets_the_user_limits(context: dict, expected: tuple[str, str]):
    import aws_cdk as cdk

    from cdk_app.declaration import API
    from cdk_app.functions import context_environment

    stack = cdk.Stack(cdk.App(context=context), "Limits")
    values = context_environment(stack, API)
    assert (values["MAX_LIVE_RESERVATIONS_PER_USER"], values["MAX_GPUS_PER_USER"]) == expected


@pytest.mark.parametrize("bad", [0, -1, "many", True, 2.5])
def test_a_bad_limit_in_context_fails_the_synth_clearly(bad: object):
    import aws_cdk as cdk

    from cdk_app.declaration import API
    from cdk_app.functions import context_environment

    stack = cdk.Stack(cdk.App(context={"maxGpusPerUser": bad}), "Limits")
    with pytest.raises(ValueError, match="context maxGpusPerUser"):
        context_environment(stack, API)


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ({}, "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"),
        ({"podImage": "r/gpu-dev:1"}, "r/gpu-dev:1"),
    ],
)
def test_context_sets_the_pod_image(context: dict, expected: str):
    import aws_cdk as cdk

    from cdk_app.declaration import RESERVATION_TASKS
    from cdk_app.functions import context_environment

    stack = cdk.Stack(cdk.App(context=context), "Image")
    values = context_environment(stack, RESERVATION_TASKS)
    assert values["LIFECYCLE_POD_IMAGE"] == expected


@pytest.mark.parametrize("bad", ["", "two words", 3])
def test_a_bad_pod_image_in_context_fails_the_synth_clearly(bad: object):
    import aws_cdk as cdk

    from cdk_app.declaration import RESERVATION_TASKS
    from cdk_app.functions import context_environment

    stack = cdk.Stack(cdk.App(context={"podImage": bad}), "Image")
    with pytest.raises(ValueError, match="context podImage"):
        context_environment(stack, RESERVATION_TASKS)
