"""`reserve --preserve-entrypoint` at submit and after (gpudev/images/entrypoint.py, migration
0043): recorded with the image asked for; `edit --enable-jupyter` on it is refused with a
sentence and changes nothing; the table refuses a row where it makes no sense, whatever
path wrote it (the named constraint, mapped to InvalidRequest)."""

from __future__ import annotations

from typing import Any

import boto3
import psycopg
import pytest
from moto import mock_aws

from gpudev.errors import InvalidRequest, constraint_error
from gpudev.images.allowlist import ImagePolicy, parse_image_patterns
from gpudev.images.resolve import ImageResolver
from gpudev.models import UserLimits
from gpudev.reservations.schemas import ReservationRequest, ReservationView
from gpudev.reservations.service import set_jupyter, submit_reservation
from localcloud.registry import seed_registry
from tests.support.submitters import ALICE, RecordingQueue

REGISTRY = "123456789012.dkr.ecr.us-east-2.amazonaws.com"
LIMITS = UserLimits(max_live_reservations=10, max_gpus=100)
CONSTRAINT = "reservations_preserve_entrypoint_check"


@pytest.fixture
def resolver() -> Any:
    with mock_aws():
        ecr = boto3.client("ecr", region_name="us-east-2")
        seed_registry(ecr)
        policy = ImagePolicy(
            "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel",
            parse_image_patterns("ghcr.io/pytorch/*"),
            REGISTRY,
        )
        yield ImageResolver(ecr, policy)


def _submit(db: psycopg.Connection[Any], resolver: Any) -> Any:
    request = ReservationRequest(
        gpu_type="t4",
        gpu_count=1,
        hours=1,
        github_user="octocat",
        image="ghcr.io/pytorch/pytorch-nightly",
        preserve_entrypoint=True,
    )
    reservation, created = submit_reservation(
        db, RecordingQueue(), ALICE, request, LIMITS, resolver
    )
    assert created
    return reservation


def test_preserve_entrypoint_is_recorded_and_shown(db, resolver):
    reservation = _submit(db, resolver)
    assert reservation.preserve_entrypoint is True
    assert ReservationView.of(reservation).preserve_entrypoint is True


def test_enabling_jupyter_on_it_is_refused_and_changes_nothing(db, resolver):
    reservation = _submit(db, resolver)
    queue: Any = RecordingQueue()
    rid = str(reservation.reservation_id)
    with pytest.raises(InvalidRequest, match="runs its image's own entrypoint"):
        set_jupyter(db, queue, ALICE, rid, True)
    row = db.execute(
        "SELECT jupyter_enabled, change_generation FROM reservations WHERE reservation_id = %s",
        (reservation.reservation_id,),
    ).fetchone()
    assert row == (False, reservation.change_generation) and queue.sent == []


@pytest.mark.parametrize(
    "change",
    [
        "UPDATE reservations SET jupyter_enabled = true WHERE reservation_id = %s",
        "UPDATE reservations SET image = NULL, image_digest = NULL, image_pull = NULL "
        "WHERE reservation_id = %s",
        "UPDATE reservations SET total_nodes = 2 WHERE reservation_id = %s",
    ],
)
def test_the_table_refuses_a_row_where_it_makes_no_sense(db, resolver, change: Any):
    reservation = _submit(db, resolver)
    with pytest.raises(psycopg.errors.CheckViolation) as raised, db.transaction():
        db.execute(change, (reservation.reservation_id,))
    assert raised.value.diag.constraint_name == CONSTRAINT
    assert isinstance(constraint_error(CONSTRAINT), InvalidRequest)
