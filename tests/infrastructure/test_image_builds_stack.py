"""Image builds in CDK (cdk_app/image_builds.py): the context bucket (encrypted, SSL only,
contexts expire), the CodeBuild project (privileged in CodeBuild only, its buildspec reading
the context the functions name), its role pushing to the builds' repository only, the API's
and the tasks' grants scoped to this project, bucket prefix and log group, and a bad
`gpudev:maxBuildContextMegabytes` failing the synth. The stack synthesizes cdk-nag clean
(conftest's template)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from tests.support.certificates import synth_context


def _one(template: Template, kind: str) -> dict[str, Any]:
    (resource,) = template.find_resources(kind).values()
    return dict(resource["Properties"])


def test_the_context_bucket_is_encrypted_private_ssl_only_and_expires_contexts(
    template: Template,
):
    bucket = _one(template, "AWS::S3::Bucket")
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"
    ] == {"SSEAlgorithm": "AES256"}
    assert bucket["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"] is True
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert (rule["Prefix"], rule["ExpirationInDays"]) == ("contexts/", 7)
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            }
        },
    )


def test_the_project_builds_privileged_in_codebuild_with_a_timeout_and_its_own_key(
    template: Template,
):
    project = _one(template, "AWS::CodeBuild::Project")
    assert project["Name"] == "gpu-dev-image-builds"
    assert project["Source"]["Type"] == "NO_SOURCE"
    assert project["Environment"]["PrivilegedMode"] is True
    assert project["TimeoutInMinutes"] == 60
    assert project["QueuedTimeoutInMinutes"] == 30
    assert "EncryptionKey" in project
    names = {v["Name"] for v in project["Environment"]["EnvironmentVariables"]}
    assert names == {"CONTEXT_BUCKET", "REPOSITORY_URI"}
    spec = project["Source"]["BuildSpec"]
    assert "$CONTEXT_KEY" in spec and "Dockerfile.gpu-dev" in spec and "$IMAGE_TAG" in spec
    json.loads(spec)


def _statements(template: Template) -> list[dict[str, Any]]:
    return [
        s
        for p in template.find_resources("AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return actions if isinstance(actions, list) else [actions]


def test_only_the_project_pushes_and_only_to_the_builds_own_repository(template: Template):
    pushes = [s for s in _statements(template) if "ecr:PutImage" in _actions(s)]
    assert len(pushes) == 1
    assert pushes[0]["Resource"]["Fn::GetAtt"][0].startswith("BuiltImages")


def test_builds_have_their_own_repository_with_their_own_lifecycle(template: Template):
    repositories = {
        r["Properties"]["RepositoryName"]: r["Properties"]
        for r in template.find_resources("AWS::ECR::Repository").values()
    }
    built = repositories["gpu-dev-builds"]
    assert built["ImageTagMutability"] == "IMMUTABLE"
    assert built["ImageScanningConfiguration"] == {"ScanOnPush": True}
    assert built["EncryptionConfiguration"] == {"EncryptionType": "KMS"}
    rules = json.loads(built["LifecyclePolicy"]["LifecyclePolicyText"])["rules"]
    assert {r["selection"]["countType"] for r in rules} == {"sinceImagePushed"}
    functions = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"IMAGE_BUILD_PROJECT": Match.any_value()}}}},
    )
    for function in functions.values():
        uri = function["Properties"]["Environment"]["Variables"]["IMAGE_BUILD_REPOSITORY_URI"]
        assert "BuiltImages" in json.dumps(uri) and "TeamImages" not in json.dumps(uri)


def test_the_buildspec_succeeds_without_pushing_a_tag_pushed_already(template: Template):
    spec = _one(template, "AWS::CodeBuild::Project")["Source"]["BuildSpec"]
    phases = json.loads(spec)["phases"]
    assert any("describe-images" in c for c in phases["pre_build"]["commands"])
    assert all(c.startswith("[ -e .pushed ] ||") for c in phases["build"]["commands"])
    assert "[ ! -e .pushed ]" in phases["post_build"]["commands"][0]


def test_the_functions_start_and_read_builds_of_this_project_only(template: Template):
    starts = [s for s in _statements(template) if "codebuild:StartBuild" in _actions(s)]
    assert len(starts) == 2  # the API and the reservation tasks
    for statement in starts:
        assert statement["Resource"]["Fn::GetAtt"][0].startswith("ImageBuilds")
    functions = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"IMAGE_BUILD_PROJECT": Match.any_value()}}}},
    )
    assert len(functions) == 2
    for function in functions.values():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables["IMAGE_BUILD_MAX_CONTEXT_BYTES"] == "500000000"


def test_a_bad_context_limit_stops_the_synth(tmp_path_factory: pytest.TempPathFactory):
    from cdk_app.app import build_app

    with pytest.raises(ValueError, match="gpudev:maxBuildContextMegabytes"):
        build_app(
            outdir=str(tmp_path_factory.mktemp("cdk.out.builds")),
            context={
                **synth_context(tmp_path_factory.mktemp("certs")),
                "gpudev:maxBuildContextMegabytes": "lots",
            },
        )
