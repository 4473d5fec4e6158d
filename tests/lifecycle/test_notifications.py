"""Told, not polled (issue #35), on the local cloud with a compressed clock: a user with an
e-mail address and a Slack webhook hears each step of a reservation once in both channels,
as `python -m localcloud.outbox` shows them; a failed start says why; a cancel sends only
"cancelled"; a webhook that fails or hangs holds up nothing else and ends in the notifier's
dead-letter queue; the webhook's secret is never answered or logged."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from localcloud import outbox
from localcloud.kubernetes.container_restarts import Crash
from localcloud.lambdas import ACCOUNT_ID
from localcloud.stack import LocalCloud
from tests.lifecycle.conftest import DEV_IMAGE, MINUTE
from tests.lifecycle.helpers import cancel, reserve, show, wait_for_status
from tests.support.api import ApiClient
from tests.support.test_logs import session_log
from tests.support.waiting import wait_for

SECRET = "T0LOCAL/B0LOCAL/thewebhooksecretpartnevershown"
USERS = {"alice": "alice@example.com", "bob": "bob@example.com"}


@pytest.fixture
def contacts(api: ApiClient, local_cloud: LocalCloud) -> Iterator[Any]:
    """`contacts(user, hook)`: the user's e-mail (verified) and a webhook of the sink that
    answers as `hook` says; each user starts with no deliveries (the per-user rate) and ends
    with no contacts."""
    sink = local_cloud.notification_sink
    assert sink is not None
    used: list[str] = []

    def save(user: str, hook: str = "ok") -> dict[str, Any]:
        with psycopg.connect(local_cloud.database_url, autocommit=True) as conn:
            conn.execute("DELETE FROM notification_deliveries WHERE user_id = %s", (user,))
        body = {"email": USERS[user], "slack_webhook": sink.webhook(hook, f"{user}/{SECRET}")}
        reply = api.call("PUT", "/v1/me/notifications", profile=user, body=body)
        assert reply.status == 200, reply.body
        assert sink.verify(USERS[user])  # the link SES mailed, followed
        used.append(user)
        return dict(reply.body)

    yield save
    for user in used:
        body = {"email": None, "slack_webhook": None}
        assert api.call("PUT", "/v1/me/notifications", profile=user, body=body).status == 200


def _sent(cloud: LocalCloud, reservation_id: str) -> list[dict[str, Any]]:
    """What the local outbox shows of one reservation (through its HTTP endpoint, as
    `python -m localcloud.outbox --json` reads it)."""
    assert cloud.notification_sink is not None
    return [
        m for m in outbox.sent(cloud.notification_sink.url) if m["reservation_id"] == reservation_id
    ]


def _events(sent: list[dict[str, Any]], channel: str) -> Counter[str]:
    return Counter(m["event"] for m in sent if m["channel"] == channel)


def _settled(cloud: LocalCloud) -> bool:
    """Every event written is on the bus, and every delivery has ended."""
    with psycopg.connect(cloud.database_url) as conn:
        row = conn.execute("SELECT count(*) FROM bus_events WHERE published_at IS NULL").fetchone()
    assert cloud.bus_delivery is not None
    return row == (0,) and cloud.bus_delivery.in_flight == 0


def test_a_queued_reservation_is_told_each_step_once_in_both_channels(
    api: ApiClient, local_cloud: LocalCloud, contacts: Any
):
    shown = contacts("bob")
    assert SECRET not in json.dumps(shown) and shown["slack_webhook"].endswith(SECRET[-4:])
    # Both h100 nodes busy with alice's (who has no contacts), then bob's waits behind them.
    first = reserve(api, gpu_type="h100", gpu_count=8, hours=0.6)["reservation_id"]
    second = reserve(api, gpu_type="h100", gpu_count=8, hours=0.6)["reservation_id"]
    wait_for_status(api, first, "active", timeout=30)
    wait_for_status(api, second, "active", timeout=30)
    rid = reserve(api, "bob", gpu_type="h100", gpu_count=8, hours=0.6, name="train-llama")[
        "reservation_id"
    ]
    wait_for_status(api, rid, "expired", timeout=120, profile="bob")
    wait_for(lambda: _settled(local_cloud), timeout=30, message="every event delivered")

    sent = _sent(local_cloud, rid)
    once_each = Counter({"queued": 1, "active": 1, "warning": 3, "expired": 1})
    assert _events(sent, "email") == once_each
    assert _events(sent, "slack") == once_each
    assert {m["recipient"] for m in sent if m["channel"] == "email"} == {USERS["bob"]}
    queued = [m for m in sent if m["event"] == "queued"]
    assert all("queued (#1)" in (m["subject"] or m["text"]) for m in queued)
    ssh = show(api, rid, profile="bob")["ssh_command"]
    assert all(ssh in m["text"] for m in sent if m["event"] == "active")
    warnings = sorted(m["subject"] for m in sent if m["event"] == "warning" and m["subject"])
    assert warnings == [f"gpu-dev: train-llama expires in {n} minutes" for n in (15, 30, 5)]
    assert all("train-llama" in m["text"] and rid in m["text"] for m in sent)
    assert _sent(local_cloud, first) == []  # alice saved no contacts
    table = outbox.table(sent)
    assert rid in table and "expired" in table


def test_an_idle_reservation_is_told_once_of_its_idle_warning_then_that_it_ended(
    api: ApiClient, local_cloud: LocalCloud, contacts: Any
):
    """Idle reclaim (issue #36) through the bus: `--idle-timeout 10m` left idle (the simulated
    exporter's default) is warned once, in both channels, then told it ended and why."""
    contacts("alice")
    rid = reserve(api, gpu_type="t4", gpu_count=1, hours=3, idle_timeout="10m")["reservation_id"]
    ended = wait_for_status(api, rid, ("expired", "failed", "cancelled"), timeout=90 * MINUTE)
    assert ended["failure_reason"] == "expired: idle for 10 min"
    wait_for(lambda: _settled(local_cloud), timeout=30, message="every event delivered")
    sent = _sent(local_cloud, rid)
    for channel in ("email", "slack"):
        told = _events(sent, channel)
        del told["queued"]  # (a start that waited for a node was told so too)
        assert told == Counter({"active": 1, "idle": 1, "expired": 1})
    for message in sent:
        if message["event"] == "idle":
            assert re.search(
                r"your GPUs have been idle for 10 minutes; the reservation ends at "
                r"\d\d:\d\d UTC unless they are used",
                message["text"],
            )
        if message["event"] == "expired":
            assert "expired: idle for 10 min" in message["text"]
    assert "idle" in outbox.table(sent)


def test_a_failed_start_sends_its_reason(api: ApiClient, local_cloud: LocalCloud, contacts: Any):
    contacts("alice")
    assert local_cloud.cluster is not None
    local_cloud.cluster.kubelet.crashing_images = {
        DEV_IMAGE: Crash(1, message="no sshd in this image\n", log="crashed\n")
    }
    try:
        rid = reserve(api, gpu_type="t4", gpu_count=1, hours=1)["reservation_id"]
        failed = wait_for_status(api, rid, "failed", timeout=60)
    finally:
        local_cloud.cluster.kubelet.crashing_images = {}
    wait_for(lambda: _settled(local_cloud), timeout=30, message="every event delivered")
    sent = _sent(local_cloud, rid)
    for channel in ("email", "slack"):
        assert _events(sent, channel)["failed"] == 1
        assert _events(sent, channel)["active"] == 0
    assert all(failed["failure_reason"] in m["text"] for m in sent if m["event"] == "failed")


def test_a_cancel_sends_only_cancelled(api: ApiClient, local_cloud: LocalCloud, contacts: Any):
    contacts("alice")
    rid = reserve(api, gpu_type="t4", gpu_count=1, hours=1)["reservation_id"]
    wait_for_status(api, rid, "active", timeout=30)
    channels = ("email", "slack")
    wait_for(
        lambda: all(_events(_sent(local_cloud, rid), c)["active"] == 1 for c in channels),
        message="active, in both channels",
    )
    # (A start that waited for a node, while the last test's pods still terminated, was
    # also told it queued.) From here on, only the cancel's message in each channel.
    before = {c: _events(_sent(local_cloud, rid), c) for c in channels}
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled", timeout=30)
    wait_for(lambda: _settled(local_cloud), timeout=30, message="every event delivered")
    sent = _sent(local_cloud, rid)
    for channel in channels:
        assert _events(sent, channel) - before[channel] == Counter({"cancelled": 1})
        assert _events(sent, channel)["active"] == 1


@pytest.mark.parametrize("hook", ["fail", "hang"])
def test_a_failing_webhook_holds_up_nothing_else_and_ends_in_the_dead_letter_queue(
    api: ApiClient, local_cloud: LocalCloud, contacts: Any, hook: str
):
    contacts("alice", hook)
    contacts("bob", "ok")
    assert local_cloud.bus_delivery is not None
    dead_lettered_before = local_cloud.bus_delivery.dead_lettered
    sqs = local_cloud.aws.client("sqs")  # type: ignore[union-attr]
    dlq = local_cloud.resources.bus_rule_dead_letter_urls["Notify"]
    broken = reserve(api, gpu_type="t4", gpu_count=1, hours=1)["reservation_id"]
    fine = reserve(api, "bob", gpu_type="t4", gpu_count=1, hours=1)["reservation_id"]
    wait_for_status(api, broken, "active", timeout=30)
    wait_for_status(api, fine, "active", timeout=30, profile="bob")

    # bob's post arrives while alice's webhook is still being tried (3 invocations of 3
    # attempts each, with waits between).
    wait_for(lambda: _events(_sent(local_cloud, fine), "slack")["active"] == 1, timeout=30)
    if hook == "hang":  # alice's first invocation alone takes 3 × 1 s and its waits
        assert local_cloud.bus_delivery.dead_lettered == dead_lettered_before

    def dead_letters() -> list[dict[str, Any]]:
        messages = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(m["Body"]) for m in messages]

    def dead_letter_of_broken() -> list[dict[str, Any]]:
        # Its Active event's (a start that waited for a node first also had a Queued one).
        return [
            r
            for r in dead_letters()
            if r["requestPayload"]["detail"]["reservation_id"] == broken
            and r["requestPayload"]["detail-type"] == "Reservation Active"
        ]

    (record,) = wait_for(dead_letter_of_broken, timeout=60, message="alice's event dead-lettered")
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 3
    assert record["requestPayload"]["detail-type"] == "Reservation Active"
    assert record["requestContext"]["functionArn"].startswith("arn:aws:lambda:")
    assert ACCOUNT_ID in record["requestContext"]["functionArn"]
    assert SECRET not in json.dumps(record)
    # Her e-mail went once, despite the three invocations; her reservation is untouched.
    assert _events(_sent(local_cloud, broken), "email")["active"] == 1
    assert _events(_sent(local_cloud, broken), "slack") == Counter()
    assert show(api, broken)["status"] == "active"


def test_the_webhook_secret_is_never_answered_or_logged(
    api: ApiClient, local_cloud: LocalCloud, contacts: Any
):
    contacts("alice", "fail")
    rid = reserve(api, gpu_type="t4", gpu_count=1, hours=1)["reservation_id"]
    wait_for_status(api, rid, "active", timeout=30)
    wait_for(lambda: _settled(local_cloud), timeout=60, message="every event delivered")
    reply = api.call("GET", "/v1/me/notifications")
    assert reply.status == 200 and SECRET not in json.dumps(reply.body)
    assert SECRET not in session_log().read_text()
