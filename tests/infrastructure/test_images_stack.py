"""Images in CDK (cdk_app/images.py): the team repository and its lifecycle, the ECR
pull-through cache rules (those needing credentials only with them), the API's allowlist and
its ECR reads scoped to the allowed repositories, a bad allowlist failing the synth, and the
whole stack cdk-nag clean with them (build_app adds AwsSolutionsChecks: a finding fails)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match, Template

from tests.support.certificates import synth_context

DOCKER_SECRET = "arn:aws:secretsmanager:us-east-2:123456789012:secret:ecr-pullthroughcache/hub-AbCd"
TOOLS = "123456789012.dkr.ecr.us-east-2.amazonaws.com/gpu-dev-images/tools:1"
ALLOWED = ["ghcr.io/pytorch/*", "docker.io/nvidia/cuda", "ecr/gpu-dev-images/*", "public.ecr.aws/*"]


@pytest.fixture(scope="module")
def with_images(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Template]:
    from cdk_app.app import build_app

    outdir: Path = tmp_path_factory.mktemp("cdk.out.images")
    app, stack = build_app(
        outdir=str(outdir),
        context={
            **synth_context(tmp_path_factory.mktemp("certs")),
            "gpudev:allowedImages": ALLOWED,
            "gpudev:toolsImage": TOOLS,
            "gpudev:pullThroughCredentials": {
                "docker.io": DOCKER_SECRET,
                "ghcr.io": DOCKER_SECRET.replace("hub", "ghcr"),
            },
        },
    )
    app.synth()  # nag findings would fail here
    yield Template.from_stack(stack)


def test_the_team_repository_is_immutable_scanned_and_expires_old_images(template: Template):
    repository = template.find_resources("AWS::ECR::Repository")
    (properties,) = [
        r["Properties"]
        for r in repository.values()
        if r["Properties"]["RepositoryName"] != "gpu-dev-builds"  # image_builds' own
    ]
    assert properties["RepositoryName"] == "gpu-dev-images"
    assert properties["ImageTagMutability"] == "IMMUTABLE"
    assert properties["ImageScanningConfiguration"] == {"ScanOnPush": True}
    rules = json.loads(properties["LifecyclePolicy"]["LifecyclePolicyText"])["rules"]
    assert {r["selection"]["tagStatus"] for r in rules} == {"untagged", "any"}


def test_without_credentials_only_ecr_public_is_cached(template: Template):
    rules = template.find_resources("AWS::ECR::PullThroughCacheRule")
    assert [r["Properties"]["EcrRepositoryPrefix"] for r in rules.values()] == ["ecr-public"]


def test_with_credentials_every_upstream_has_its_cache_rule(with_images: Template):
    rules = {
        r["Properties"]["EcrRepositoryPrefix"]: r["Properties"]
        for r in with_images.find_resources("AWS::ECR::PullThroughCacheRule").values()
    }
    assert set(rules) == {"docker-hub", "github", "ecr-public"}
    assert rules["docker-hub"]["UpstreamRegistryUrl"] == "registry-1.docker.io"
    assert rules["docker-hub"]["CredentialArn"] == DOCKER_SECRET
    assert "CredentialArn" not in rules["ecr-public"]
    with_images.has_resource_properties(
        "AWS::ECR::RepositoryCreationTemplate", {"AppliedFor": ["PULL_THROUGH_CACHE"]}
    )


def _api_environment(template: Template) -> dict[str, Any]:
    functions = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"POWERTOOLS_SERVICE_NAME": "gpudev-api"}}}},
    )
    (function,) = functions.values()
    return function["Properties"]["Environment"]["Variables"]


def _ecr_statements(template: Template) -> list[dict[str, Any]]:
    found = []
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            actions = actions if isinstance(actions, list) else [actions]
            if any(a.startswith("ecr:") for a in actions) and not _image_builds(statement):
                found.append(statement)
    return found


def _image_builds(statement: dict[str, Any]) -> bool:
    """The image builds' statements (test_image_builds_stack.py): on the builds'
    repository, or docker login's GetAuthorizationToken (no resource)."""
    resources = statement["Resource"]
    resources = resources if isinstance(resources, list) else [resources]
    return all(r == "*" or "Fn::GetAtt" in r for r in resources)


def _resource_names(statement: dict[str, Any]) -> set[str]:
    resources = statement["Resource"]
    resources = resources if isinstance(resources, list) else [resources]
    return {
        "".join(str(p) for p in r["Fn::Join"][1]).rsplit("repository/", 1)[1] for r in resources
    }


def test_the_api_gets_the_allowlist_and_the_default_image(with_images: Template):
    environment = _api_environment(with_images)
    assert environment["ALLOWED_IMAGES"] == ",".join(ALLOWED)
    assert environment["LIFECYCLE_POD_IMAGE"] == "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"


def test_the_api_reads_image_metadata_only_in_the_allowed_repositories(with_images: Template):
    statements = _ecr_statements(with_images)
    reads = [s for s in statements if "ecr:BatchGetImage" in s["Action"]]
    imports = [s for s in statements if "ecr:BatchImportUpstreamImage" in s["Action"]]
    assert len(reads) == 1
    assert sorted(reads[0]["Action"]) == ["ecr:BatchGetImage", "ecr:DescribeImages"]
    assert _resource_names(reads[0]) == {
        "github/pytorch/*",
        "docker-hub/nvidia/cuda",
        "gpu-dev-images/*",
        "ecr-public/*",
    }  # not Docker Hub's cache wholesale for the default image: the API never resolves it
    (api_import,) = [s for s in imports if "github/pytorch/*" in _resource_names(s)]
    assert _resource_names(api_import) == {
        "github/pytorch/*",
        "docker-hub/nvidia/cuda",
        "ecr-public/*",
    }
    api_imports = [s for s in imports if "gpu-dev-images/*" not in _resource_names(s)]
    assert all("gpu-dev-images" not in name for s in api_imports for name in _resource_names(s))


def test_no_allowlist_gives_the_api_no_ecr_access(template: Template):
    assert _api_environment(template)["ALLOWED_IMAGES"] == ""
    assert _ecr_statements(template) == []


@pytest.mark.parametrize(
    ("allowed", "problem"),
    [
        (["nvcr.io/nvidia/*"], "NGC"),
        (["quay.io/x/*"], "the registry must be"),
        (["ghcr.io/Py/*"], "lower-case"),
        (["ecr/*"], "name a repository"),
        (["docker.io/nvidia/*"], "needs its pull-through cache rule"),  # no credentials
        ("not-a-list" and 5, "a list of patterns"),
    ],
)
def test_a_bad_allowlist_fails_the_synth_saying_why(allowed: Any, problem: str):
    from cdk_app.images import build_images

    stack = cdk.Stack(cdk.App(context={"gpudev:allowedImages": allowed}), "Images")
    function = cdk.aws_lambda.Function(
        stack,
        "F",
        runtime=cdk.aws_lambda.Runtime.PYTHON_3_12,
        handler="x.y",
        code=cdk.aws_lambda.Code.from_inline("x"),
    )
    with pytest.raises(ValueError, match=problem):
        build_images(stack, function, function)


def test_a_credential_that_is_not_a_pull_through_secret_fails_the_synth():
    from cdk_app.images import active_rules

    stack = cdk.Stack(
        cdk.App(context={"gpudev:pullThroughCredentials": {"docker.io": "arn:aws:iam::1:role/x"}}),
        "Images",
    )
    with pytest.raises(ValueError, match="ecr-pullthroughcache"):
        active_rules(stack)


def test_nodes_may_import_upstream_images_through_the_cache_prefixes():
    from cdk_app.images import grant_node_image_pulls

    stack = cdk.Stack(cdk.App(), "Nodes")
    role = cdk.aws_iam.Role(
        stack, "NodeRole", assumed_by=cdk.aws_iam.ServicePrincipal("ec2.amazonaws.com")
    )
    grant_node_image_pulls(role)
    Template.from_stack(stack).has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": [
                    Match.object_like(
                        {"Action": ["ecr:BatchImportUpstreamImage", "ecr:CreateRepository"]}
                    )
                ]
            }
        },
    )


def _tasks_environment(template: Template) -> dict[str, Any]:
    functions = template.find_resources(
        "AWS::Lambda::Function",
        {
            "Properties": {
                "Environment": {
                    "Variables": {"POWERTOOLS_SERVICE_NAME": "gpudev-reservation-tasks"}
                }
            }
        },
    )
    ((_, tasks),) = functions.items()
    return tasks["Properties"]["Environment"]["Variables"]


def test_the_reservation_tasks_get_the_tools_image_from_context(
    template: Template, with_images: Template
):
    assert _tasks_environment(template)["LIFECYCLE_TOOLS_IMAGE"] == ""
    assert _tasks_environment(with_images)["LIFECYCLE_TOOLS_IMAGE"] == TOOLS


@pytest.mark.parametrize("bad", ["two words", 5, ["x"]])
def test_a_tools_image_that_is_not_one_reference_fails_the_synth(bad: Any):
    from cdk_app.images import tools_image

    with pytest.raises(ValueError, match="gpudev:toolsImage"):
        tools_image(cdk.Stack(cdk.App(context={"gpudev:toolsImage": bad}), "Tools"))
