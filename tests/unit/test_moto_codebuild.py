"""The CodeBuild simulation at the moto boundary (localcloud/moto_codebuild.py): a build
runs for its time through CodeBuild's phases, then pushes its image to ECR with the context
hash as tag; a Dockerfile marked to fail fails in BUILD with docker's line in the log;
a missing context fails in DOWNLOAD_SOURCE. Guards the seam: if moto renames what we wrap,
these fail."""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.codebuild.models import CodeBuildBackend

from localcloud.moto_codebuild import (
    PHASES,
    CodeBuildSimulation,
    dockerfile_steps,
    failing_step,
)
from tests.support.waiting import wait_for

REGION = "us-east-2"


def _tar(dockerfile: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile.gpu-dev")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    with mock_aws():
        clients = {s: boto3.client(s, region_name=REGION) for s in ("s3", "ecr", "logs")}
        codebuild = boto3.client("codebuild", region_name=REGION)
        clients["s3"].create_bucket(
            Bucket="contexts", CreateBucketConfiguration={"LocationConstraint": REGION}
        )
        uri = clients["ecr"].create_repository(repositoryName="gpu-dev-images")["repository"][
            "repositoryUri"
        ]
        codebuild.create_project(
            name="gpu-dev-image-builds",
            source={"type": "S3", "location": "contexts/contexts/", "buildspec": "version: 0.2"},
            artifacts={"type": "NO_ARTIFACTS"},
            environment={
                "type": "LINUX_CONTAINER",
                "image": "aws/codebuild/standard:7.0",
                "computeType": "BUILD_GENERAL1_SMALL",
                "environmentVariables": [
                    {"name": "CONTEXT_BUCKET", "value": "contexts"},
                    {"name": "REPOSITORY_URI", "value": uri},
                ],
            },
            serviceRole="arn:aws:iam::123456789012:role/builds",
        )
        simulation = CodeBuildSimulation(lambda s: clients[s], seconds=0.6)
        undo = simulation.install()
        try:
            yield clients | {"codebuild": codebuild}
        finally:
            undo()


def _start(aws: dict[str, Any], dockerfile: str | None, tag: str | None = None) -> str:
    """The build's id; its tag is the context's hash unless `tag` says otherwise."""
    body = _tar(dockerfile or "")
    context_hash = hashlib.sha256(body).hexdigest()
    if dockerfile is not None:
        aws["s3"].put_object(Bucket="contexts", Key=f"contexts/{context_hash}.tar", Body=body)
    build = aws["codebuild"].start_build(
        projectName="gpu-dev-image-builds",
        environmentVariablesOverride=[
            {"name": "IMAGE_TAG", "value": tag or context_hash, "type": "PLAINTEXT"},
            {"name": "CONTEXT_KEY", "value": f"contexts/{context_hash}.tar", "type": "PLAINTEXT"},
        ],
    )["build"]
    return str(build["id"])


def _build(aws: dict[str, Any], build_id: str) -> dict[str, Any]:
    return dict(aws["codebuild"].batch_get_builds(ids=[build_id])["builds"][0])


def _variables(build: dict[str, Any]) -> dict[str, str]:
    return {v["name"]: v["value"] for v in build["environment"]["environmentVariables"]}


def _log(aws: dict[str, Any], build: dict[str, Any]) -> list[str]:
    events = aws["logs"].get_log_events(
        logGroupName=build["logs"]["groupName"], logStreamName=build["logs"]["streamName"]
    )["events"]
    return [e["message"] for e in events]


def test_a_build_runs_through_its_phases_then_pushes_the_image_tagged_by_the_hash(aws):
    build_id = _start(
        aws, "FROM ubuntu:24.04\nRUN apt-get update && \\\n  apt-get install -y git\n"
    )
    first = _build(aws, build_id)
    assert first["buildStatus"] == "IN_PROGRESS"
    seen = {first["currentPhase"]}

    def done() -> dict[str, Any] | None:
        build = _build(aws, build_id)
        seen.add(build["currentPhase"])
        return build if build["buildStatus"] != "IN_PROGRESS" else None

    final = wait_for(done, message="the build ends")
    assert final["buildStatus"] == "SUCCEEDED"
    assert seen <= {name for name, _ in PHASES} | {"COMPLETED"}  # CodeBuild's own phases
    tag = _variables(final)["IMAGE_TAG"]
    images = aws["ecr"].describe_images(
        repositoryName="gpu-dev-images", imageIds=[{"imageTag": tag}]
    )["imageDetails"]
    assert images and images[0]["imageSizeInBytes"] > 0
    log = _log(aws, final)
    assert any(line.startswith("Step 2/2 : RUN apt-get update") for line in log), log


def test_a_dockerfile_marked_to_fail_fails_in_build_with_dockers_line_in_the_log(aws):
    build_id = _start(aws, "FROM ubuntu:24.04\nRUN echo hi\nRUN false\nRUN echo never\n")
    final = wait_for(
        lambda: (b := _build(aws, build_id))["buildStatus"] != "IN_PROGRESS" and b,
        message="the build ends",
    )
    assert final["buildStatus"] == "FAILED"
    assert [p["phaseStatus"] for p in final["phases"] if p["phaseType"] == "BUILD"] == ["FAILED"]
    log = _log(aws, final)
    assert "The command '/bin/sh -c false' returned a non-zero code: 1" in log
    assert not any("Step 4/4" in line for line in log)
    with pytest.raises(aws["ecr"].exceptions.ImageNotFoundException):
        aws["ecr"].describe_images(
            repositoryName="gpu-dev-images", imageIds=[{"imageTag": _variables(final)["IMAGE_TAG"]}]
        )


def test_a_missing_context_fails_in_download_source(aws):
    build_id = _start(aws, None)
    final = wait_for(
        lambda: (b := _build(aws, build_id))["buildStatus"] != "IN_PROGRESS" and b,
        message="the build ends",
    )
    assert final["buildStatus"] == "FAILED"
    assert final["phases"][-1] == {"phaseType": "DOWNLOAD_SOURCE", "phaseStatus": "FAILED"}


def test_uninstalling_restores_moto():
    saved = CodeBuildBackend.batch_get_builds
    undo = CodeBuildSimulation(lambda s: None).install()
    assert CodeBuildBackend.batch_get_builds is not saved
    undo()
    assert CodeBuildBackend.batch_get_builds is saved


def test_steps_are_counted_as_docker_counts_them():
    steps = dockerfile_steps("# c\nFROM a\n\nRUN x \\\n  y\n# gpu-dev: fail\nCMD z\n")
    assert steps == ["FROM a", "RUN x    y", "CMD z"]
    assert failing_step(steps) is None
    assert failing_step(["FROM a", "RUN true # gpu-dev: fail"]) == 1
    assert failing_step(["FROM a", "run   false"]) == 1


def test_a_context_that_is_not_what_its_hash_says_fails_before_the_build(aws):
    build_id = _start(aws, "FROM ubuntu:24.04\n", tag="f" * 64)
    final = wait_for(
        lambda: (b := _build(aws, build_id))["buildStatus"] != "IN_PROGRESS" and b,
        message="the build ends",
    )
    assert final["buildStatus"] == "FAILED"
    assert final["phases"][-1] == {"phaseType": "PRE_BUILD", "phaseStatus": "FAILED"}
    assert "sha256sum: WARNING: 1 computed checksum did NOT match" in _log(aws, final)
