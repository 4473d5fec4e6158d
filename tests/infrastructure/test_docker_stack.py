"""`reserve --docker`'s infrastructure (cdk_app/docker.py): the API's switch is off unless
the operator sets `gpudev:allowDocker`, the reservation tasks get the sidecar's image, and a
context value of the wrong kind stops the synth naming the key."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from cdk_app.docker import (
    ALLOW_DOCKER_CONTEXT,
    DEFAULT_DOCKER_IMAGE,
    DOCKER_IMAGE_CONTEXT,
    allow_docker,
    configure_docker,
    docker_image,
)


def _environment(template: Template, service: str) -> dict[str, Any]:
    functions = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"POWERTOOLS_SERVICE_NAME": service}}}},
    )
    (function,) = functions.values()
    return function["Properties"]["Environment"]["Variables"]


def test_the_deployment_allows_no_docker_by_default(template: Template):
    assert _environment(template, "gpudev-api")["ALLOW_DOCKER"] == "false"
    tasks = _environment(template, "gpudev-reservation-tasks")
    assert tasks["LIFECYCLE_DOCKER_IMAGE"] == DEFAULT_DOCKER_IMAGE == "docker:27-dind"


def _configured(context: dict[str, Any]) -> Template:
    stack = cdk.Stack(cdk.App(context=context), "Docker")

    def function(name: str) -> lambda_.Function:
        return lambda_.Function(
            stack,
            name,
            runtime=lambda_.Runtime.PYTHON_3_12,
            handler="index.handler",
            code=lambda_.Code.from_inline("def handler(event, context): pass"),
        )

    configure_docker(stack, function("Api"), function("Tasks"))
    return Template.from_stack(stack)


def _variables(template: Template) -> dict[str, dict[str, str]]:
    return {
        name: resource["Properties"]["Environment"]["Variables"]
        for name, resource in template.find_resources("AWS::Lambda::Function").items()
    }


def test_the_operator_turns_docker_on_and_names_the_sidecars_image():
    image = "123456789012.dkr.ecr.us-east-2.amazonaws.com/gpu-dev-images/dind:27"
    variables = _variables(_configured({ALLOW_DOCKER_CONTEXT: True, DOCKER_IMAGE_CONTEXT: image}))
    (api,) = [v for name, v in variables.items() if name.startswith("Api")]
    (tasks,) = [v for name, v in variables.items() if name.startswith("Tasks")]
    assert api == {"ALLOW_DOCKER": "true"}
    assert tasks == {"LIFECYCLE_DOCKER_IMAGE": image}


@pytest.mark.parametrize(("raw", "allowed"), [(None, False), (False, False), ("true", True)])
def test_allow_docker_reads_a_boolean_or_its_word(raw: Any, allowed: bool):
    context = {} if raw is None else {ALLOW_DOCKER_CONTEXT: raw}
    assert allow_docker(cdk.Stack(cdk.App(context=context), "S")) is allowed


@pytest.mark.parametrize(
    ("key", "bad", "read"),
    [
        (ALLOW_DOCKER_CONTEXT, "yes", allow_docker),
        (ALLOW_DOCKER_CONTEXT, 1, allow_docker),
        (DOCKER_IMAGE_CONTEXT, "two words", docker_image),
        (DOCKER_IMAGE_CONTEXT, ["x"], docker_image),
    ],
)
def test_a_context_value_of_the_wrong_kind_fails_the_synth_naming_its_key(key, bad, read):
    with pytest.raises(ValueError, match=key):
        read(cdk.Stack(cdk.App(context={key: bad}), "S"))
