"""`gpu-dev config notify` and `GET/PUT /v1/me/notifications` through the real SigV4 gateway
against the local cloud: contacts saved, the webhook masked in every answer, the address
verified by SES's link (the local outbox's `verify`), each bad input a 422 sentence with
nothing written, and the CLI's own refusals before any request."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from localcloud import outbox
from localcloud.stack import LocalCloud
from tests.support.api import ApiClient

SECRET = "T0E2E/B0E2E/e2ewebhooksecretnevershown"


@pytest.fixture
def clean(api: ApiClient) -> Iterator[None]:
    yield
    body = {"email": None, "slack_webhook": None, "enabled": True}
    assert api.call("PUT", "/v1/me/notifications", profile="bob", body=body).status == 200


def test_contacts_are_saved_shown_masked_and_verified_by_the_link(
    local_cloud: LocalCloud, run, clean: None, tmp_path
):
    sink = local_cloud.notification_sink
    assert sink is not None
    webhook = sink.webhook("ok", SECRET)
    saved = run(
        "config", "notify", "--email", "bob@example.com", "--slack-webhook", webhook,
        "--warnings", "15,5", profile="bob",
    )  # fmt: skip
    assert saved.exit_code == 0, saved.output
    assert "not verified yet" in saved.output and SECRET not in saved.output
    assert "15 min, 5 min" in saved.output

    stack = tmp_path / "stack.json"
    stack.write_text(json.dumps(local_cloud.describe()))
    assert outbox.main(["verify", "bob@example.com", "--stack", str(stack)]) == 0
    shown = run("config", "notify", "--show", "-o", "json", profile="bob")
    assert shown.exit_code == 0, shown.output
    settings = json.loads(shown.output)
    assert settings["email_status"] == "verified"
    assert settings["slack_webhook"].endswith(SECRET[-4:]) and SECRET not in shown.output

    off = run("config", "notify", "--off", "-o", "json", profile="bob")
    assert json.loads(off.output)["enabled"] is False
    assert json.loads(off.output)["email"] == "bob@example.com"  # kept


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"email": "bob"}, "email"),
        ({"slack_webhook": f"https://evil.example/services/{SECRET}"}, "slack_webhook"),
        ({"slack_webhook": f"https://hooks.slack.com/services/{SECRET}#x"}, "slack_webhook"),
        ({"events": ["everything"]}, "events"),
        ({"warning_minutes": [7]}, "warning_minutes"),
        ({"enabled": None}, "enabled"),
        ({"phone": "+15550100"}, "phone"),
    ],
)
def test_each_bad_input_is_a_422_sentence_and_nothing_is_written(
    api: ApiClient, clean: None, body: dict, field: str
):
    before = api.call("GET", "/v1/me/notifications", profile="bob")
    assert before.status == 200
    reply = api.call("PUT", "/v1/me/notifications", profile="bob", body=body)
    assert reply.status == 422, reply.body
    assert reply.body["field"].endswith(field) and reply.body["message"]
    assert SECRET not in json.dumps(reply.body)
    assert api.call("GET", "/v1/me/notifications", profile="bob").body == before.body


@pytest.mark.parametrize(
    "args",
    [
        ("config", "notify"),
        ("config", "notify", "--show", "--off"),
        ("config", "notify", "--on", "--off"),
        ("config", "notify", "--email", "a@example.com", "--no-email"),
        ("config", "notify", "--warnings", "soon"),
    ],
)
def test_the_cli_refuses_what_it_cannot_send(run, args: tuple[str, ...]):
    result = run(*args, profile="bob")
    assert result.exit_code == 2, result.output
