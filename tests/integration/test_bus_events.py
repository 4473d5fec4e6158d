"""The lifecycle's public events (migrations/0039_bus_events.sql, gpudev/events/): each is
written once, by the row change itself, in the shape the versioned schema documents; the
relay puts it on the bus after the commit, once, and a refusal leaves it for the next run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import jsonschema
import psycopg
import pytest

from gpudev.events.catalogue import SOURCE, event_schema
from gpudev.events.relay import relay_bus_events
from gpudev.models import ReservationStatus
from gpudev.repositories.lifecycle import LifecycleRepository
from gpudev.repositories.utilisation import UtilisationRepository
from gpudev.reservations.schemas import ReservationRequest
from gpudev.reservations.service import submit_reservation
from gpudev.utilisation_rows import IdleChange
from tests.support.submitters import ALICE, RecordingQueue

BUS = "gpu-dev"


def _submit(conn: psycopg.Connection[Any]) -> UUID:
    request = ReservationRequest(
        gpu_type="t4", gpu_count=1, hours=1, github_user="octocat", name="train-llama"
    )
    created, _ = submit_reservation(conn, RecordingQueue(), ALICE, request)  # type: ignore[arg-type]
    return created.reservation_id


def _events(conn: psycopg.Connection[Any]) -> list[tuple[str, dict[str, Any]]]:
    rows = conn.execute("SELECT detail_type, detail FROM bus_events ORDER BY created_at, event_key")
    return [(detail_type, detail) for detail_type, detail in rows]


def _queue(
    conn: psycopg.Connection[Any], reservation_id: UUID, position: int, wait_seconds: float = 600
) -> None:
    # What the lifecycle's wait and the allocator's record_waits.sql write.
    conn.execute(
        "UPDATE reservations SET status = 'queued', queue_position = %s,"
        " estimated_start_at = now() + make_interval(secs => %s) WHERE reservation_id = %s",
        (position, wait_seconds, reservation_id),
    )


def _activate(conn: psycopg.Connection[Any], reservation_id: UUID) -> None:
    conn.execute(
        "UPDATE reservations SET status = 'preparing', queue_position = NULL, "
        "granted_at = now() WHERE reservation_id = %s",
        (reservation_id,),
    )
    LifecycleRepository(conn).activate(
        reservation_id,
        seconds_per_hour=3600,
        node_ip="203.0.113.7",
        node_port=30022,
        node_address_kind="external",
        jupyter_available=False,
        jupyter_error=None,
        ssh_nodes=[],
    )


def _warn(conn: psycopg.Connection[Any], reservation_id: UUID, sent: list[int]) -> None:
    LifecycleRepository(conn).checkpoint(
        reservation_id,
        seconds_per_hour=3600,
        warnings_sent=sent,
        warning_text="expires soon",
        jupyter_url=None,
        jupyter_port=None,
        generation=0,
        keyless_users=[],
    )


def _validate(detail_type: str, detail: dict[str, Any]) -> None:
    jsonschema.validate(
        {"source": SOURCE, "detail-type": detail_type, "detail": detail},
        event_schema(),
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )


def test_a_reservation_s_life_writes_each_event_once_in_the_documented_shape(
    autocommit_conn: psycopg.Connection[Any],
):
    conn = autocommit_conn
    reservation_id = _submit(conn)
    _queue(conn, reservation_id, 1)
    _queue(conn, reservation_id, 2)  # moved back: no second "queued"
    _activate(conn, reservation_id)
    for sent in ([30], [30], [30, 15], [30, 15, 5], [30, 15, 5]):
        _warn(conn, reservation_id, sent)
    conn.execute(
        "UPDATE reservations SET health_warning = 'OOM-killed once' WHERE reservation_id = %s",
        (reservation_id,),
    )
    LifecycleRepository(conn).end(reservation_id, ReservationStatus.EXPIRED, "expired on time")
    LifecycleRepository(conn).end(reservation_id, ReservationStatus.CANCELLED, "too late")

    events = _events(conn)
    for detail_type, detail in events:
        _validate(detail_type, detail)
    assert [t for t, _ in events] == [
        "Reservation Queued",
        "Reservation Active",
        "Reservation Warning",
        "Reservation Warning",
        "Reservation Warning",
        "Reservation Health",
        "Reservation Ended",
    ]
    queued, active, *warnings, health, ended = (d for _, d in events)
    assert queued["queue_position"] == 1
    assert queued["reservation_name"] == "train-llama"
    assert active["ssh_command"] == "ssh -p 30022 dev@203.0.113.7"
    assert [w["minutes_left"] for w in warnings] == [30, 15, 5]
    assert health["warning"] == "OOM-killed once"
    assert (ended["ending"], ended["reason"]) == ("expired", "expired on time")
    assert len({d["event_id"] for _, d in events}) == len(events)


def test_a_request_only_waiting_for_the_next_allocator_pass_is_not_told_it_queued(
    autocommit_conn: psycopg.Connection[Any],
):
    reservation_id = _submit(autocommit_conn)
    _queue(autocommit_conn, reservation_id, 1, wait_seconds=0)
    assert _events(autocommit_conn) == []
    _queue(autocommit_conn, reservation_id, 1, wait_seconds=300)  # then capacity went
    ((detail_type, detail),) = _events(autocommit_conn)
    assert (detail_type, detail["estimated_wait_minutes"]) == ("Reservation Queued", 5)


def test_an_extension_starts_the_warnings_over(autocommit_conn: psycopg.Connection[Any]):
    conn = autocommit_conn
    reservation_id = _submit(conn)
    _activate(conn, reservation_id)
    _warn(conn, reservation_id, [30])
    conn.execute(
        "UPDATE reservations SET duration_hours = duration_hours + 1 WHERE reservation_id = %s",
        (reservation_id,),
    )
    _warn(conn, reservation_id, [])  # the checkpoint moves the expiry and resets
    _warn(conn, reservation_id, [30])
    warnings = [d for t, d in _events(conn) if t == "Reservation Warning"]
    assert len(warnings) == 2
    assert warnings[0]["expires_at"] != warnings[1]["expires_at"]


def _idle(conn: psycopg.Connection[Any], reservation_id: UUID, **change: Any) -> None:
    # What the availability updater writes (utilisation/service.py), as its role.
    with conn.transaction():
        conn.execute("SET LOCAL ROLE gpudev_reconcilers")
        repo = UtilisationRepository(conn)
        seen = repo.candidates()  # the write applies to rows still as the plan read them
        repo.record_idle([IdleChange(reservation_id, **change)], seen)


def test_each_idle_warning_is_one_event_and_the_idle_ending_is_ended_with_its_reason(
    autocommit_conn: psycopg.Connection[Any],
):
    conn = autocommit_conn
    reservation_id = _submit(conn)
    conn.execute(
        "UPDATE reservations SET idle_timeout_minutes = 120 WHERE reservation_id = %s",
        (reservation_id,),
    )
    _activate(conn, reservation_id)
    first = datetime(2026, 11, 27, 21, 0, tzinfo=UTC)
    warning = "idle: its GPUs have not been used for 2 h; it ends in 30 min (at 21:30 UTC)"
    _idle(
        conn,
        reservation_id,
        warning=warning,
        warned_at=first,
        ends_at=first + timedelta(minutes=30),
    )
    _idle(conn, reservation_id)  # the next runs, still warned: nothing new
    _idle(conn, reservation_id, warning=warning, warned_at=first)
    _idle(conn, reservation_id, active_at=first, clear_warning=True)  # used again: withdrawn
    second = first + timedelta(hours=3)
    _idle(
        conn,
        reservation_id,
        warning=warning,
        warned_at=second,
        ends_at=second + timedelta(minutes=30),
    )
    _idle(conn, reservation_id, ending="idle for 2 h")
    LifecycleRepository(conn).end(
        reservation_id, ReservationStatus.EXPIRED, "expired: idle for 2 h"
    )

    events = _events(conn)
    for detail_type, detail in events:
        _validate(detail_type, detail)
    assert [t for t, _ in events] == [
        "Reservation Active",
        "Reservation Idle",
        "Reservation Idle",
        "Reservation Ended",
    ]
    _, idle_1, idle_2, ended = (d for _, d in events)
    assert (idle_1["idle_minutes"], idle_1["ends_at"]) == (120, "2026-11-27T21:30:00Z")
    assert idle_2["ends_at"] == "2026-11-28T00:30:00Z"
    assert idle_1["warning"] == warning and idle_1["event_id"] != idle_2["event_id"]
    assert (ended["ending"], ended["reason"]) == ("expired", "expired: idle for 2 h")


def test_a_cancel_before_the_start_writes_only_its_ending(
    autocommit_conn: psycopg.Connection[Any],
):
    conn = autocommit_conn
    reservation_id = _submit(conn)
    LifecycleRepository(conn).end(reservation_id, ReservationStatus.CANCELLED, "cancelled by you")
    events = _events(conn)
    assert [(t, d["ending"], d["reason"]) for t, d in events] == [
        ("Reservation Ended", "cancelled", "cancelled by you")
    ]
    _validate(*events[0])


def test_the_functions_roles_cannot_write_events_themselves(
    autocommit_conn: psycopg.Connection[Any],
):
    reservation_id = _submit(autocommit_conn)
    for role in ("gpudev_api", "gpudev_lifecycle", "gpudev_reconcilers"):
        with autocommit_conn.transaction(force_rollback=True):
            autocommit_conn.execute(f"SET LOCAL ROLE {role}")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                autocommit_conn.execute(
                    "INSERT INTO bus_events (event_key, reservation_id, detail_type, detail) "
                    "VALUES ('x', %s, 'Reservation Ended', '{}')",
                    (reservation_id,),
                )


# -- the relay ---------------------------------------------------------------------------


@pytest.fixture
def bus() -> Iterator[tuple[Any, Any, str]]:
    """moto's EventBridge with the bus and a rule sending its events to an SQS queue."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        events = boto3.client("events", region_name="us-east-2")
        sqs = boto3.client("sqs", region_name="us-east-2")
        events.create_event_bus(Name=BUS)
        url = sqs.create_queue(QueueName="seen")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        events.put_rule(Name="all", EventBusName=BUS, EventPattern=json.dumps({"source": [SOURCE]}))
        events.put_targets(Rule="all", EventBusName=BUS, Targets=[{"Id": "q", "Arn": arn}])
        yield events, sqs, url


def _received(sqs: Any, url: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        seen += [json.loads(m["Body"]) for m in messages]
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ],
        )
    return seen


def test_the_relay_puts_each_event_on_the_bus_once(
    autocommit_conn: psycopg.Connection[Any], bus: tuple[Any, Any, str]
):
    events, sqs, url = bus
    for _ in range(12):  # more than one PutEvents call's ten entries
        reservation_id = _submit(autocommit_conn)
        LifecycleRepository(autocommit_conn).end(
            reservation_id, ReservationStatus.CANCELLED, "cancelled by you"
        )
    first = relay_bus_events(autocommit_conn, events, BUS)
    again = relay_bus_events(autocommit_conn, events, BUS)
    assert (first.published, first.refused, again.published) == (12, 0, 0)
    seen = _received(sqs, url)
    assert len(seen) == 12
    for event in seen:
        _validate(event["detail-type"], event["detail"])
    unpublished = autocommit_conn.execute(
        "SELECT count(*) FROM bus_events WHERE published_at IS NULL"
    ).fetchone()
    assert unpublished == (0,)


def test_events_the_bus_refuses_wait_for_the_next_run(
    autocommit_conn: psycopg.Connection[Any], bus: tuple[Any, Any, str]
):
    events, sqs, url = bus
    reservation_id = _submit(autocommit_conn)
    LifecycleRepository(autocommit_conn).end(
        reservation_id, ReservationStatus.CANCELLED, "cancelled by you"
    )
    refused = relay_bus_events(autocommit_conn, events, "no-such-bus")
    assert (refused.published, refused.refused) == (0, 1)
    attempts = autocommit_conn.execute("SELECT relay_attempts FROM bus_events").fetchone()
    assert attempts == (1,)
    published = relay_bus_events(autocommit_conn, events, BUS)
    assert (published.published, published.refused) == (1, 0)
    assert len(_received(sqs, url)) == 1
