"""Node 0's Jupyter check reaches the row at activation (sql/lifecycle/activate.sql), and the
row decides what users get: no Jupyter URL unless the pod said Jupyter is there (the reason
instead), and `PUT .../jupyter` on a pod that said it is not is refused with that reason,
with nothing written and no job."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
import pytest

from gpudev.errors import Conflict
from gpudev.models import NodeEndpoint, ReservationStatus
from gpudev.repositories import LifecycleRepository, ReservationsRepository
from gpudev.reservations.schemas import ReservationRequest, ReservationView
from gpudev.reservations.service import set_jupyter, submit_reservation
from tests.support.databases import queued_changes
from tests.support.submitters import ALICE, RecordingQueue

REASON = (
    "the image pytorch/pytorch:2.8.0 has no jupyter-lab (no jupyter-lab on PATH (/usr/bin));"
    " operators: build the dev image (deploy/dev-image) and deploy with it"
)


HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJZ0Ym1w3voEDayKIxrUxWgyY6VDIjG4XR87xKsgRtO4"


def _active(db: psycopg.Connection[Any], available: bool, reason: str | None) -> UUID:
    request = ReservationRequest(gpu_type="t4", gpu_count=1, hours=2, github_user="octocat")
    created, _ = submit_reservation(db, RecordingQueue(), ALICE, request)  # type: ignore[arg-type]
    rid = created.reservation_id
    assert ReservationsRepository(db).set_status(rid, ReservationStatus.QUEUED)
    rows = LifecycleRepository(db)
    assert rows.preparing(
        rid,
        pod_name="gpu-dev-x-0",
        namespace="gpu-dev",
        jupyter_token="t0ken",
        ssh_host_keys=[HOST_KEY],
        ready_timeout_seconds=60,
        generation=0,
        keyless_users=["nokeys"],
    )
    activated = rows.activate(
        rid,
        seconds_per_hour=3600,
        node_ip="54.1.2.3",
        node_port=30022,
        node_address_kind="external",
        jupyter_available=available,
        jupyter_error=reason,
        ssh_nodes=[
            NodeEndpoint(rank=0, node_ip="54.1.2.3", node_port=30022, node_address_kind="external")
        ],
    )
    assert activated is not None
    assert activated.keyless_users == ["nokeys"]  # written at preparing, kept at activation
    assert [n.node_port for n in activated.ssh_nodes] == [30022]
    assert (activated.jupyter_available, activated.jupyter_error) == (available, reason)
    assert activated.ssh_host_keys == [HOST_KEY]  # written at preparing, kept at activation
    return rid


def test_enabling_jupyter_on_a_pod_without_it_is_refused_with_the_reason(
    db: psycopg.Connection[Any],
):
    rid = _active(db, False, REASON)
    queue = RecordingQueue()
    with pytest.raises(Conflict) as refused:
        set_jupyter(db, queue, ALICE, str(rid), enabled=True)  # type: ignore[arg-type]
    assert (
        refused.value.message
        == f"Jupyter cannot be enabled on reservation {str(rid)[:8]}: {REASON}"
    )
    assert "deploy/dev-image" in str(refused.value.hint)
    row = ReservationsRepository(db).get(rid)
    assert row is not None
    assert (row.jupyter_enabled, row.change_generation, queued_changes(db, rid), queue.sent) == (
        False,
        0,
        0,
        [],
    )
    # turning it off stays allowed (nothing to do here: it is off)
    set_jupyter(db, queue, ALICE, str(rid), enabled=False)  # type: ignore[arg-type]


def test_a_view_shows_a_jupyter_url_only_when_the_pod_said_jupyter_is_there(
    db: psycopg.Connection[Any],
):
    for available, reason in ((False, REASON), (True, None)):
        rid = _active(db, available, reason)
        db.execute(  # a URL on the row (a checkpoint before the check existed, say)
            "UPDATE reservations SET jupyter_url = 'http://54.1.2.3:30888/lab?token=t0ken'"
            " WHERE reservation_id = %s",
            (rid,),
        )
        row = ReservationsRepository(db).get(rid)
        assert row is not None
        view = ReservationView.of(row)
        assert (view.jupyter_available, view.jupyter_error) == (available, reason)
        assert (view.jupyter_url is not None) is available


def test_a_pod_from_before_the_check_keeps_its_jupyter_url(db: psycopg.Connection[Any]):
    """Migration 0021 leaves the verdict unknown on reservations active at deploy time: their
    pods still run the old startup script and serve Jupyter, so their URL stays."""
    rid = _active(db, True, None)
    db.execute(
        "UPDATE reservations SET jupyter_available = NULL, jupyter_url = %s"
        " WHERE reservation_id = %s",
        ("http://54.1.2.3:30888/lab?token=t0ken", rid),
    )
    row = ReservationsRepository(db).get(rid)
    assert row is not None
    assert ReservationView.of(row).jupyter_url == "http://54.1.2.3:30888/lab?token=t0ken"


def test_enabling_jupyter_is_recorded_when_the_pod_has_it(
    db: psycopg.Connection[Any],
):
    rid = _active(db, True, None)
    queue = RecordingQueue()
    changed = set_jupyter(db, queue, ALICE, str(rid), enabled=True)  # type: ignore[arg-type]
    assert (changed.jupyter_enabled, changed.change_generation, len(queue.sent)) == (True, 1, 1)
