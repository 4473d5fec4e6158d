"""The API's reservation calls stay within three SQL round trips."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from gpudev.identity import caller_from_arn
from gpudev.jobs import CreateReservationJob
from gpudev.reservations.service import ReservationRequest, find_reservation, submit_reservation
from tests.support.counting import CountingConnection

ALICE = caller_from_arn("arn:aws:iam::123456789012:user/alice")


class RecordingQueue:
    def __init__(self) -> None:
        self.sent: list[CreateReservationJob] = []

    def send(self, job: CreateReservationJob) -> str:
        self.sent.append(job)
        return "message-id"


def test_create_repeat_and_lookup_take_at_most_three_statements(fresh_database: str):
    queue = RecordingQueue()
    request = ReservationRequest(
        gpu_type="t4", gpu_count=2, hours=1.5, client_request_id=uuid.uuid4().hex
    )
    with psycopg.connect(fresh_database) as raw:
        conn: Any = CountingConnection(raw)
        created, was_created = submit_reservation(conn, queue, ALICE, request)  # type: ignore[arg-type]
        assert was_created and conn.statements <= 3
        conn.statements = 0
        again, was_created = submit_reservation(conn, queue, ALICE, request)  # type: ignore[arg-type]
        assert not was_created and again.reservation_id == created.reservation_id
        assert conn.statements <= 3
        conn.statements = 0
        assert find_reservation(conn, ALICE, str(created.reservation_id)[:8]) == created
        assert conn.statements == 1
    assert [job.reservation_id for job in queue.sent] == [created.reservation_id]
