"""`reserve --docker` at submit (gpudev/docker/request.py, migration 0046): recorded and
shown when the deployment allows it; refused with a sentence and nothing written when it
does not, with profiling, or on several nodes; the table refuses a row where it makes no
sense, whatever path wrote it (the named constraint, mapped to InvalidRequest)."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from gpudev.errors import InvalidRequest, constraint_error
from gpudev.models import UserLimits
from gpudev.reservations.schemas import ReservationRequest, ReservationView
from gpudev.reservations.service import submit_reservation
from tests.support.submitters import ALICE, RecordingQueue

LIMITS = UserLimits(max_live_reservations=10, max_gpus=100)
CONSTRAINT = "reservations_docker_check"


def _request(**fields: Any) -> ReservationRequest:
    # --docker takes a whole node: a t4 node has 4 GPUs
    body = {"gpu_type": "t4", "gpu_count": 4, "hours": 1, "github_user": "octocat"}
    return ReservationRequest.model_validate(body | {"docker": True} | fields)


def _count(db: psycopg.Connection[Any]) -> int:
    row = db.execute("SELECT count(*) FROM reservations").fetchone()
    assert row is not None
    return int(row[0])


def test_docker_is_recorded_and_shown_when_the_deployment_allows_it(db):
    queue: Any = RecordingQueue()
    reservation, created = submit_reservation(
        db, queue, ALICE, _request(), LIMITS, allow_docker=True
    )
    assert created and reservation.docker is True
    assert ReservationView.of(reservation).docker is True
    assert len(queue.sent) == 1


@pytest.mark.parametrize(
    ("allowed", "fields", "sentence"),
    [
        (False, {}, "not offered by this deployment.*gpudev:allowDocker"),
        (True, {"profiling": True}, "--docker and --profiling do not go together"),
        (True, {"gpu_type": "h100", "gpu_count": 16}, "needs 2"),
        (True, {"gpu_count": 1}, "takes a whole node, and a t4 node has 4 GPUs"),
        (True, {"gpu_type": "cpu-x86", "gpu_count": 0}, "cpu-x86 nodes are shared"),
    ],
)
def test_docker_refused_writes_nothing_and_sends_nothing(db, allowed, fields, sentence):
    queue: Any = RecordingQueue()
    before = _count(db)
    with pytest.raises(InvalidRequest, match=sentence) as raised:
        submit_reservation(db, queue, ALICE, _request(**fields), LIMITS, allow_docker=allowed)
    assert raised.value.field == "docker"
    assert _count(db) == before and queue.sent == []


def test_the_deployments_switch_is_read_when_the_caller_gives_none(db, monkeypatch):
    from gpudev.settings import reset_settings_cache

    monkeypatch.delenv("ALLOW_DOCKER", raising=False)
    reset_settings_cache()
    try:
        with pytest.raises(InvalidRequest, match="not offered"):
            submit_reservation(db, RecordingQueue(), ALICE, _request(), LIMITS)
    finally:
        reset_settings_cache()


@pytest.mark.parametrize(
    "change",
    [
        "UPDATE reservations SET total_nodes = 2 WHERE reservation_id = %s",
        "UPDATE reservations SET profiling = true WHERE reservation_id = %s",
    ],
)
def test_the_table_refuses_a_docker_row_where_it_makes_no_sense(db, change: Any):
    reservation, _ = submit_reservation(
        db, RecordingQueue(), ALICE, _request(), LIMITS, allow_docker=True
    )
    with pytest.raises(psycopg.errors.CheckViolation) as raised, db.transaction():
        db.execute(change, (reservation.reservation_id,))
    assert raised.value.diag.constraint_name == CONSTRAINT
    assert isinstance(constraint_error(CONSTRAINT), InvalidRequest)
