"""The build service (gpudev/image_builds/builds.py) against real PostgreSQL and moto's
S3, ECR, CloudWatch Logs and CodeBuild (builds simulated by localcloud/moto_codebuild.py):
one build per context, reused once it stands; a context never uploaded starts nothing; a
failed build is tried again only for what was asked after it failed; a finished build
records its digest and size, or its log's tail."""

from __future__ import annotations

import hashlib
import io
import tarfile
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import psycopg
import pytest
from moto import mock_aws

from gpudev.callers import bound_user
from gpudev.errors import LimitReached, NotFound, Unavailable
from gpudev.identity import caller_from_arn
from gpudev.image_builds.builds import ImageBuilds, context_key, idempotency_token
from gpudev.image_builds.requests import request_build
from gpudev.lifecycle.building import _use_image, build_image
from gpudev.lifecycle.payloads import BuildImage
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.lifecycle.taxonomy import StateChanged
from gpudev.repositories.reservations import ReservationsRepository
from gpudev.settings import ImageBuildSettings, LifecycleSettings
from localcloud.image_builds import (
    BUILDS_REPOSITORY,
    CONTEXT_BUCKET,
    PROJECT,
    prepare_image_builds,
)
from localcloud.moto_codebuild import CodeBuildSimulation
from localcloud.registry import SeededImage, manifest
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
        simulation = CodeBuildSimulation(client, seconds=0.5)
        undo = simulation.install()
        try:
            yield {"client": client, "environment": environment, "simulation": simulation}
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


def _builds_with(builds: ImageBuilds, **settings: Any) -> ImageBuilds:
    other = ImageBuilds.__new__(ImageBuilds)
    other.__dict__.update(builds.__dict__)
    other.settings = builds.settings.model_copy(update=settings)
    return other


def test_builds_push_to_their_own_repository_not_the_teams(aws, builds):
    assert builds.repository == BUILDS_REPOSITORY == "gpu-dev-builds"
    context_hash = _upload(aws, "FROM ubuntu:24.04\nRUN echo own\n")
    builds.start(context_hash, retry_failed_before=datetime.now(UTC))
    assert _finished(builds, context_hash).status == "succeeded"
    images = aws["client"]("ecr").describe_images(repositoryName="gpu-dev-builds")
    assert [i["imageTags"] for i in images["imageDetails"]] == [[context_hash]]


def test_a_built_image_ecr_no_longer_has_is_built_again(aws, builds):
    context_hash = _upload(aws, "FROM ubuntu:24.04\nRUN echo expire\n")
    builds.start(context_hash, retry_failed_before=datetime.now(UTC))
    first = _finished(builds, context_hash)
    assert first.status == "succeeded"
    aws["client"]("ecr").batch_delete_image(  # ECR's lifecycle expired it
        repositoryName=BUILDS_REPOSITORY, imageIds=[{"imageTag": context_hash}]
    )
    reopened = builds.standing(context_hash)
    assert reopened is not None
    assert (reopened.status, reopened.image_digest) == ("failed", None)
    # any ask builds it again, even one made before the image expired
    again = builds.start(context_hash, retry_failed_before=first.claimed_at)
    assert again.status == "building" and again.build_id != first.build_id
    assert _finished(builds, context_hash).status == "succeeded"
    assert _started(aws) == 2


def test_a_refused_start_build_releases_the_claim_at_once(aws, builds):
    context_hash = _upload(aws, "FROM ubuntu:24.04\nRUN echo refused\n")
    refusing = _builds_with(builds, project="gpu-dev-no-such-project")
    with pytest.raises(Unavailable, match="did not start"):
        refusing.start(context_hash, retry_failed_before=datetime.now(UTC))
    released = builds.get(context_hash)
    assert released is not None and released.status == "failed"
    # the next ask starts it now, not after the stale-claim window
    started = builds.start(context_hash, retry_failed_before=datetime.now(UTC))
    assert started.status == "building" and started.build_id is not None
    assert _started(aws) == 1


def test_a_claim_asking_codebuild_twice_gets_one_build(aws, builds):
    context_hash = _upload(aws, "FROM ubuntu:24.04\nRUN echo twice\n")
    row = builds.start(context_hash, retry_failed_before=datetime.now(UTC))
    again = aws["client"]("codebuild").start_build(
        projectName=PROJECT, idempotencyToken=idempotency_token(context_hash, row.claimed_at)
    )
    assert again["build"]["id"] == row.build_id
    assert _started(aws) == 1


def test_a_fresh_claim_is_not_taken_over_within_the_claim_window(aws, builds, autocommit_conn):
    context_hash = _upload(aws, "FROM ubuntu:24.04\nRUN echo slow\n")
    # a caller claimed it and is still in StartBuild (a minute ago: the old window)
    autocommit_conn.execute(
        "INSERT INTO image_builds (context_hash, claimed_at) VALUES (%s, now() - interval '2 min')",
        (context_hash,),
    )
    row = builds.start(context_hash, retry_failed_before=datetime.now(UTC))
    assert (row.status, row.build_id) == ("building", None)
    assert _started(aws) == 0


def test_a_build_that_failed_after_another_pushed_its_tag_succeeded(aws, builds):
    context_hash = _upload(aws, "FROM ubuntu:24.04\nRUN false\n")
    # another build of the same context pushed the (immutable) tag first
    aws["client"]("ecr").put_image(
        repositoryName=BUILDS_REPOSITORY,
        imageManifest=manifest(SeededImage(BUILDS_REPOSITORY, context_hash, 1000)),
        imageTag=context_hash,
    )
    builds.start(context_hash, retry_failed_before=datetime.now(UTC))
    done = _finished(builds, context_hash)
    assert done.status == "succeeded" and done.image_digest


def test_a_caller_at_the_cap_starts_no_build_and_a_failed_one_waits_unless_asked(
    aws, builds, autocommit_conn
):
    caller = caller_from_arn("arn:aws:iam::123456789012:user/capped")
    capped = _builds_with(builds, max_building_per_user=1, retry_failed_after_seconds=3600)
    first = _upload(aws, "FROM ubuntu:24.04\nRUN false\n")
    second = _upload(aws, "FROM ubuntu:24.04\nRUN echo second\n")
    bound_user(autocommit_conn, caller)
    for context_hash in (first, second):
        capped.add_owner(context_hash, caller.username)
    assert request_build(autocommit_conn, caller, first, capped).status == "building"
    with pytest.raises(LimitReached, match="limit is 1"):
        request_build(autocommit_conn, caller, second, capped)
    assert capped.get(second) is None
    _finished(capped, first)
    # failed just now: asking again shows the failure, asking with retry builds it again
    assert request_build(autocommit_conn, caller, first, capped).status == "failed"
    assert request_build(autocommit_conn, caller, first, capped, retry=True).status == "building"
    assert _started(aws) == 2


def _reservation(conn: psycopg.Connection[Any], context_hash: str, **more: Any) -> uuid.UUID:
    bound_user(conn, caller_from_arn("arn:aws:iam::123456789012:user/alice"))
    reservation_id = uuid.uuid4()
    columns = {
        "reservation_id": reservation_id,
        "user_id": "alice",
        "status": "queued",
        "gpu_type": "h100",
        "gpu_count": 8,
        "total_nodes": 1,
        "duration_hours": 4,
        "task_token": f"token-{reservation_id}",
        "image_build": context_hash,
        **more,
    }
    names = ", ".join(columns)
    marks = ", ".join(["%s"] * len(columns))
    conn.execute(f"INSERT INTO reservations ({names}) VALUES ({marks})", list(columns.values()))  # noqa: S608
    return reservation_id


def _lifecycle(conn: psycopg.Connection[Any]) -> Lifecycle:
    return Lifecycle(conn, None, None, None, LifecycleSettings(), "gpu-dev", "gpu-dev-profiling")  # type: ignore[arg-type]


def test_a_reservation_that_moved_on_is_not_given_the_image_silently(builds, autocommit_conn):
    digest = "sha256:" + "c" * 64
    context_hash = "e" * 64
    pull = f"r/x@{digest}"
    moved_on = _reservation(
        autocommit_conn, context_hash, image="r/x:1", image_digest=digest, image_pull=pull
    )
    reservation = ReservationsRepository(autocommit_conn).get(moved_on)
    assert reservation is not None
    with pytest.raises(StateChanged, match="left 'queued'"):
        _use_image(_lifecycle(autocommit_conn), builds, reservation, digest)


def test_a_reservation_stops_waiting_for_a_build_that_outlasts_the_limit(
    aws, builds, autocommit_conn
):
    context_hash = _upload(aws, "FROM ubuntu:24.04\nRUN echo long\n")
    rid = _reservation(autocommit_conn, context_hash)
    task = BuildImage(reservation_id=rid)
    lifecycle = _lifecycle(autocommit_conn)
    aws["simulation"].seconds = 3 * 3600  # a build that runs on and on
    first = build_image(lifecycle, task, builds)
    assert first.outcome == "building"
    autocommit_conn.execute(
        "UPDATE image_builds SET claimed_at = now() - make_interval(secs => %s)",
        (builds.settings.wait_limit_seconds + 60,),
    )
    ended = build_image(lifecycle, task, builds)
    assert ended.outcome == "failed"
    assert "did not end within 96 minutes" in (ended.reason or "")


def test_a_reservation_that_would_start_a_build_is_refused_at_the_cap_and_writes_nothing(
    aws, builds, autocommit_conn, monkeypatch
):
    """`reserve --dockerfile` starts a build too: the cap holds at submit, not only for
    `gpu-dev image build` (else submit-and-cancel would start builds without end)."""
    from gpudev.reservations.schemas import ReservationRequest
    from gpudev.reservations.service import submit_reservation
    from gpudev.settings import reset_settings_cache
    from tests.support.submitters import RecordingQueue

    for name, value in {
        "IMAGE_BUILD_PROJECT": builds.settings.project,
        "IMAGE_BUILD_CONTEXT_BUCKET": builds.settings.context_bucket,
        "IMAGE_BUILD_REPOSITORY_URI": builds.settings.repository_uri,
        "IMAGE_BUILD_MAX_BUILDING_PER_USER": "1",
    }.items():
        monkeypatch.setenv(name, value)
    reset_settings_cache()
    aws["simulation"].seconds = 600  # the first build runs throughout
    caller = caller_from_arn("arn:aws:iam::123456789012:user/capped")
    building = _upload(aws, "FROM ubuntu:24.04\nRUN echo one\n")
    waiting = _upload(aws, "FROM ubuntu:24.04\nRUN echo two\n")
    bound_user(autocommit_conn, caller)
    for context_hash in (building, waiting):
        builds.add_owner(context_hash, caller.username)
    assert request_build(autocommit_conn, caller, building, builds).status == "building"
    body = {"gpu_type": "t4", "gpu_count": 1, "hours": 1, "github_user": "octocat"}
    request = ReservationRequest.model_validate(body | {"image_build": waiting})
    queue: Any = RecordingQueue()
    try:
        with pytest.raises(LimitReached, match="limit is 1"):
            submit_reservation(autocommit_conn, queue, caller, request)
    finally:
        reset_settings_cache()
    assert queue.sent == []
    count = autocommit_conn.execute(
        "SELECT count(*) FROM reservations WHERE user_id = 'capped'"
    ).fetchone()
    assert count is not None and count[0] == 0
