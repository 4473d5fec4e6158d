"""The build service (gpudev/image_builds/builds.py) against real PostgreSQL and moto's
S3, ECR, CloudWatch Logs and CodeBuild (builds simulated by localcloud/moto_codebuild.py):
one build per context, reused once it stands; a context never uploaded starts nothing; a
failed build is tried again only for what was asked after it failed; a finished build
records its digest and size, or its log's tail."""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import psycopg
import pytest
from moto import mock_aws

from gpudev.errors import NotFound
from gpudev.image_builds.builds import ImageBuilds, context_key
from gpudev.settings import ImageBuildSettings
from localcloud.image_builds import CONTEXT_BUCKET, PROJECT, prepare_image_builds
from localcloud.moto_codebuild import CodeBuildSimulation
from tests.support.waiting import wait_for

ACCOUNT = "123456789012"
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
        clients: dict[str, Any] = {}

        def client(service: str) -> Any:
            if service not in clients:
                clients[service] = boto3.client(service, region_name=REGION)
            return clients[service]

        environment = prepare_image_builds(client, ACCOUNT, REGION, poll_seconds=1)
        undo = CodeBuildSimulation(client, seconds=0.5).install()
        try:
            yield {"client": client, "environment": environment}
        finally:
            undo()


@pytest.fixture
def builds(aws: dict[str, Any], autocommit_conn: psycopg.Connection[Any]) -> ImageBuilds:
    environment = aws["environment"]
    settings = ImageBuildSettings(
        project=environment["IMAGE_BUILD_PROJECT"],
        context_bucket=environment["IMAGE_BUILD_CONTEXT_BUCKET"],
        repository_uri=environment["IMAGE_BUILD_REPOSITORY_URI"],
    )
    client = aws["client"]
    return ImageBuilds(
        autocommit_conn,
        settings,
        codebuild=client("codebuild"),
        s3=client("s3"),
        logs=client("logs"),
        ecr=client("ecr"),
    )


def _upload(aws: dict[str, Any], dockerfile: str) -> str:
    body = _tar(dockerfile)
    context_hash = hashlib.sha256(body).hexdigest()
    aws["client"]("s3").put_object(Bucket=CONTEXT_BUCKET, Key=context_key(context_hash), Body=body)
    return context_hash


def _started(aws: dict[str, Any]) -> int:
    codebuild = aws["client"]("codebuild")
    return len(codebuild.list_builds_for_project(projectName=PROJECT)["ids"])


def _finished(builds: ImageBuilds, context_hash: str) -> Any:
    def done() -> Any:
        row = builds.get(context_hash)
        assert row is not None
        row = builds.refresh(row)
        return row if row.status != "building" else None

    return wait_for(done, message="the build ends")


def test_a_context_is_built_once_and_reused(aws, builds):
    context_hash = _upload(aws, "FROM ubuntu:24.04\nRUN echo one\n")
    now = datetime.now(UTC)
    first = builds.start(context_hash, retry_failed_before=now)
    assert (first.status, first.build_id is not None) == ("building", True)
    assert builds.start(context_hash, retry_failed_before=now).build_id == first.build_id
    done = _finished(builds, context_hash)
    assert done.status == "succeeded" and done.image_digest and done.size_bytes
    assert done.phase == "COMPLETED" and done.finished_at is not None
    again = builds.start(context_hash, retry_failed_before=datetime.now(UTC))
    assert (again.status, again.build_id) == ("succeeded", first.build_id)
    assert _started(aws) == 1


def test_a_context_never_uploaded_starts_nothing(aws, builds):
    with pytest.raises(NotFound, match="upload it first"):
        builds.start("d" * 64, retry_failed_before=datetime.now(UTC))
    assert builds.get("d" * 64) is None
    assert _started(aws) == 0


def test_a_failed_build_is_tried_again_only_for_a_request_made_after_it_failed(aws, builds):
    context_hash = _upload(aws, "FROM ubuntu:24.04\nRUN false\n")
    asked = datetime.now(UTC)
    builds.start(context_hash, retry_failed_before=asked)
    failed = _finished(builds, context_hash)
    assert failed.status == "failed"
    assert "returned a non-zero code: 1" in (failed.log_tail or "")
    assert failed.phase == "failed in BUILD"

    # the request it failed for: not built again
    assert builds.start(context_hash, retry_failed_before=asked).build_id == failed.build_id
    # a later request: built again
    retried = builds.start(context_hash, retry_failed_before=datetime.now(UTC) + timedelta(0, 1))
    assert retried.status == "building" and retried.build_id != failed.build_id
    assert retried.log_tail is None
    assert _started(aws) == 2
