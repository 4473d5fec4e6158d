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
