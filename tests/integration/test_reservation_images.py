"""`reserve --image` at submit (gpudev/reservations/service.py with gpudev/images/): an
allowed image is recorded with the digest ECR has for it (moto's, the boundary) and what
the pod will run; a malformed, refused or missing one writes nothing and sends no job."""

from __future__ import annotations

from typing import Any

import boto3
import psycopg
import pytest
from moto import mock_aws

from gpudev.errors import InvalidRequest, MalformedInput
from gpudev.images.allowlist import ImageNotAllowed, ImagePolicy, parse_image_patterns
from gpudev.images.resolve import ImageNotFound, ImageResolver
from gpudev.models import UserLimits
from gpudev.reservations.schemas import ReservationRequest, ReservationView
from gpudev.reservations.service import submit_reservation
from localcloud.registry import seed_registry
from tests.support.submitters import ALICE, RecordingQueue

REGISTRY = "123456789012.dkr.ecr.us-east-2.amazonaws.com"
LIMITS = UserLimits(max_live_reservations=10, max_gpus=100)


@pytest.fixture
def images() -> Any:
    with mock_aws():
        ecr = boto3.client("ecr", region_name="us-east-2")
        seed_registry(ecr)
        policy = ImagePolicy(
            "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel",
            parse_image_patterns("ghcr.io/pytorch/*,ecr/gpu-dev-images/*"),
            REGISTRY,
        )
        yield ImageResolver(ecr, policy), ecr


def _request(image: str | None) -> ReservationRequest:
    return ReservationRequest(
        gpu_type="t4", gpu_count=1, hours=1, github_user="octocat", image=image
    )


def _rows(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT count(*) FROM reservations").fetchone()
    assert row is not None
    return int(row[0])


def test_an_allowed_image_is_recorded_with_its_digest_and_what_the_pod_runs(db, images):
    resolver, ecr = images
    queue: Any = RecordingQueue()
    reservation, created = submit_reservation(
        db, queue, ALICE, _request("ghcr.io/pytorch/pytorch-nightly"), LIMITS, resolver
    )
    digest = ecr.describe_images(repositoryName="github/pytorch/pytorch-nightly")["imageDetails"][
        0
    ]["imageDigest"]
    assert created and len(queue.sent) == 1
    assert reservation.image == "ghcr.io/pytorch/pytorch-nightly:latest"
    assert reservation.image_digest == digest
    assert reservation.image_pull == f"{REGISTRY}/github/pytorch/pytorch-nightly@{digest}"
    view = ReservationView.of(reservation)
    assert (view.image, view.image_digest) == (reservation.image, digest)
    assert "image_pull" not in view.model_dump()  # the orchestration's, not the view's


def test_no_image_is_the_default_image_and_asks_no_registry(db):
    class NoRegistry:
        def resolve(self, text: str) -> None:
            raise AssertionError("asked the registry")

    reservation, _ = submit_reservation(
        db,
        RecordingQueue(),
        ALICE,
        _request(None),
        LIMITS,
        NoRegistry(),  # type: ignore[arg-type]
    )
    assert (reservation.image, reservation.image_digest, reservation.image_pull) == (
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    "default",
    [
        "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel",
        "docker.io/pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel",
    ],
)
def test_the_default_image_named_is_exactly_no_image(db, images, default: str):
    # The seeded registry has the default under docker-hub/: still not read, not recorded.
    resolver, _ = images
    queue: Any = RecordingQueue()
    reservation, created = submit_reservation(db, queue, ALICE, _request(default), LIMITS, resolver)
    assert created and len(queue.sent) == 1
    assert (reservation.image, reservation.image_digest, reservation.image_pull) == (
        None,
        None,
        None,
    )


@pytest.mark.parametrize(
    ("image", "refusal"),
    [
        ("Not A Reference", MalformedInput),
        ("ghcr.io/pytorch/x@sha256:short", MalformedInput),
        ("quay.io/pytorch/pytorch:1", ImageNotAllowed),
        ("debian:12", ImageNotAllowed),
        ("ghcr.io/pytorch/pytorch-nightly:no-such-tag", ImageNotFound),
        (f"{REGISTRY}/gpu-dev-images/missing:1", ImageNotFound),
    ],
)
def test_a_bad_image_writes_nothing_and_sends_no_job(db, images, image: str, refusal: type):
    resolver, _ = images
    queue: Any = RecordingQueue()
    with pytest.raises(refusal) as refused:
        submit_reservation(db, queue, ALICE, _request(image), LIMITS, resolver)
    assert refused.value.field == "image"
    assert isinstance(
        refused.value, MalformedInput if refusal is MalformedInput else InvalidRequest
    )
    assert _rows(db) == 0 and queue.sent == []
    user = db.execute("SELECT count(*) FROM users WHERE username = 'alice'").fetchone()
    assert user is not None and user[0] == 0  # not even the caller's first-call row


def test_a_digest_that_does_not_fit_the_shape_is_refused_by_the_table(db):
    with pytest.raises(psycopg.errors.CheckViolation, match="reservations_image_digest_check"):
        db.execute(
            "INSERT INTO users (username, principal_arn) VALUES ('zed', 'arn:aws:iam::1:user/z');"
            "INSERT INTO reservations (reservation_id, user_id, gpu_type, gpu_count,"
            " duration_hours, image, image_digest, image_pull) VALUES (gen_random_uuid(),"
            " 'zed', 't4', 1, 1, 'x', 'md5:1', 'x@md5:1')"
        )
