"""The Lambda test events in events/ are accepted by the handlers they are written for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localcloud.stack import LocalCloud

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
