"""The Lambda test events in events/ are accepted by the handlers they are written for."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from localcloud.stack import LocalCloud
from tests.support.databases import insert_pending_reservation

EVENTS = Path(__file__).resolve().parents[2] / "events"


@pytest.mark.parametrize(
    ("event_file", "status", "expected"),
    [
        ("api/health.json", 200, {"status": "ok"}),
        ("api/get_me.json", 200, {"username": "alice"}),
        ("api/list_reservations.json", 200, {"limit": 10}),
    ],
)
def test_api_test_events_are_answered(
    local_cloud: LocalCloud, event_file: str, status: int, expected: dict[str, str]
):
    event = json.loads((EVENTS / event_file).read_text())
    invocation = local_cloud.lambdas.invoke("Api", event)
    assert not invocation.errored, invocation.payload
    assert invocation.payload["statusCode"] == status
    body = json.loads(invocation.payload["body"])
    assert body.items() >= expected.items()


def test_the_create_event_creates_once_then_returns_the_same_reservation(local_cloud):
    event = json.loads((EVENTS / "api/create_reservation.json").read_text())
    first = local_cloud.lambdas.invoke("Api", event).payload
    again = local_cloud.lambdas.invoke("Api", event).payload
    assert first["statusCode"] in (200, 202) and again["statusCode"] == 200
    assert (
        json.loads(first["body"])["reservation_id"] == json.loads(again["body"])["reservation_id"]
    )


EVENT_RESERVATION = "0c0ffee0-0000-4000-8000-000000000001"  # the id the change events name


def test_the_change_events_act_on_the_reservation_they_name(local_cloud):
    insert_pending_reservation(local_cloud.database_url, EVENT_RESERVATION)
    for name, field in (("extend_reservation", "duration_hours"), ("cancel_reservation", None)):
        event = json.loads((EVENTS / f"api/{name}.json").read_text())
        payload = local_cloud.lambdas.invoke("Api", event).payload
        assert payload["statusCode"] == 202, payload
        body = json.loads(payload["body"])
        assert body["reservation_id"] == EVENT_RESERVATION
        if field:
            assert body[field] == 3


def test_the_create_disk_event_creates_the_disk_once(local_cloud):
    event = json.loads((EVENTS / "api/create_disk.json").read_text())
    first = local_cloud.lambdas.invoke("Api", event).payload
    again = local_cloud.lambdas.invoke("Api", event).payload
    assert (first["statusCode"], again["statusCode"]) == (202, 409), (first, again)


def test_the_disk_purge_accepts_its_scheduled_event_and_records_its_run(local_cloud):
    event = json.loads((EVENTS / "disk_purge/scheduled.json").read_text())
    invocation = local_cloud.lambdas.invoke("DiskPurge", event)
    assert not invocation.errored, invocation.payload
    # the ticker may be running it at the same moment: then this run is skipped
    assert invocation.payload["outcome"] in ("succeeded", "skipped")
    with psycopg.connect(local_cloud.database_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM reconciler_runs WHERE reconciler = 'disk_purge'"
        ).fetchone()
    assert row is not None and row[0] >= 1
