"""Notification contacts and the notifier (gpudev/notifications/) against PostgreSQL, moto's
KMS and SES v2, and the local webhook sink: contacts are checked whole before anything is
written, the webhook URL is sealed and never shown or logged, an address is mailed only once
SES verified it, and each (event, channel) is sent once, within the user's rate."""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from gpudev.errors import InvalidRequest
from gpudev.notifications.channels import SesEmail, SlackWebhook
from gpudev.notifications.delivery import DeliveryFailed, Notifier
from gpudev.notifications.messages import BusEvent
from gpudev.notifications.schemas import NotificationSettingsUpdate
from gpudev.notifications.service import (
    ContactServices,
    change_notification_settings,
    notification_settings,
)
from gpudev.notifications.vault import WebhookVault
from localcloud.notifications import SENDER, NotificationSink
from tests.support.submitters import ALICE

REGION = "us-east-1"
ADDRESS = "alice@example.com"
SECRET = "T0SECRET/B0SECRET/x0x0x0x0thisisthesecretpart"


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    import boto3
    from moto import mock_aws

    with mock_aws():
        kms = boto3.client("kms", region_name=REGION)
        sesv2 = boto3.client("sesv2", region_name=REGION)
        key_id = kms.create_key()["KeyMetadata"]["KeyId"]
        sesv2.create_email_identity(EmailIdentity=SENDER)
        sink = NotificationSink(REGION, hang_seconds=1.0).start()
        sink.verify(SENDER)
        try:
            yield {"kms": kms, "sesv2": sesv2, "key_id": key_id, "sink": sink}
        finally:
            sink.stop()


@pytest.fixture
def services(aws: dict[str, Any]) -> ContactServices:
    return ContactServices(
        vault=WebhookVault(aws["kms"], aws["key_id"]),
        email=SesEmail(aws["sesv2"], SENDER),
        webhook_prefixes=("https://hooks.slack.com/services/", aws["sink"].hooks_url),
    )


def _put(conn: psycopg.Connection[Any], services: ContactServices, **body: Any) -> Any:
    update = NotificationSettingsUpdate.model_validate(body)
    return change_notification_settings(conn, ALICE, update, services)


def _row(conn: psycopg.Connection[Any]) -> Any:
    return conn.execute("SELECT * FROM notification_contacts").fetchall()


# -- contacts ------------------------------------------------------------------------------


def test_contacts_are_saved_with_the_webhook_sealed_and_shown_masked(
    autocommit_conn: psycopg.Connection[Any], services: ContactServices, aws: dict[str, Any]
):
    webhook = aws["sink"].webhook("ok", SECRET)
    shown = _put(autocommit_conn, services, email=ADDRESS, slack_webhook=webhook)
    assert shown.email == ADDRESS and shown.email_status == "pending"
    assert shown.slack_webhook is not None and SECRET not in shown.slack_webhook
    assert shown.slack_webhook.endswith(SECRET[-4:])
    assert shown.events == ["queued", "active", "warning", "ended", "health"]
    assert shown.warning_minutes == [30, 15, 5]
    stored = autocommit_conn.execute(
        "SELECT webhook_ciphertext, webhook_hint FROM notification_contacts"
    ).fetchone()
    assert stored is not None and SECRET.encode() not in bytes(stored[0])
    assert services.vault.open("alice", bytes(stored[0])) == webhook
    with pytest.raises(Exception, match="InvalidCiphertext"):
        services.vault.open("bob", bytes(stored[0]))  # another user's context: refused


def test_an_address_is_pending_until_ses_says_it_is_verified(
    autocommit_conn: psycopg.Connection[Any], services: ContactServices, aws: dict[str, Any]
):
    _put(autocommit_conn, services, email=ADDRESS)
    assert notification_settings(autocommit_conn, ALICE, services.email).email_status == "pending"
    assert aws["sink"].verify(ADDRESS)  # the link SES mailed, followed
    assert notification_settings(autocommit_conn, ALICE, services.email).email_status == "verified"


def test_a_partial_change_keeps_the_rest_and_null_removes_a_contact(
    autocommit_conn: psycopg.Connection[Any], services: ContactServices, aws: dict[str, Any]
):
    _put(autocommit_conn, services, email=ADDRESS, slack_webhook=aws["sink"].webhook("ok"))
    shown = _put(autocommit_conn, services, enabled=False, events=["ended", "active"])
    assert (shown.enabled, shown.email, shown.events) == (False, ADDRESS, ["active", "ended"])
    assert shown.slack_webhook is not None
    shown = _put(autocommit_conn, services, slack_webhook=None, warning_minutes=[5, 60, 5])
    assert (shown.slack_webhook, shown.warning_minutes) == (None, [60, 5])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"slack_webhook": "https://example.com/services/T0/B0/x"}, "slack_webhook"),
        ({"slack_webhook": "http://hooks.slack.com/services/T0/B0/x"}, "slack_webhook"),
        ({"slack_webhook": "https://hooks.slack.com/services/"}, "slack_webhook"),
        ({"slack_webhook": f"https://hooks.slack.com/services/{SECRET}?x=1"}, "slack_webhook"),
        ({"slack_webhook": "https://hooks.slack.com/services/" + "x" * 500}, "slack_webhook"),
    ],
)
def test_a_bad_change_is_refused_whole_and_writes_nothing(
    autocommit_conn: psycopg.Connection[Any],
    services: ContactServices,
    body: dict[str, Any],
    field: str,
):
    before = _put(autocommit_conn, services, enabled=True)
    rows = _row(autocommit_conn)
    with pytest.raises(InvalidRequest) as refused:
        _put(autocommit_conn, services, **body)
    assert refused.value.field == field
    assert SECRET not in refused.value.message
    assert _row(autocommit_conn) == rows
    assert notification_settings(autocommit_conn, ALICE, services.email) == before


@pytest.mark.parametrize(
    "body",
    [
        {"email": "not-an-address"},
        {"email": "a@b"},
        {"email": ADDRESS, "events": None},
        {"enabled": None},
        {"warning_minutes": None},
        {"events": ["everything"]},
        {"warning_minutes": [7]},
        {"enabled": "sometimes"},
        {"phone": "+1 555"},
    ],
)
def test_a_body_outside_the_model_is_refused_before_the_service(body: dict[str, Any]):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        NotificationSettingsUpdate.model_validate(body)


# -- the notifier --------------------------------------------------------------------------


def _event(
    detail_type: str = "Reservation Active", event_id: str | None = None, **extra: Any
) -> BusEvent:
    reservation_id = str(uuid.uuid4())
    detail = {
        "version": "1",
        "event_id": event_id or f"{reservation_id}/active",
        "reservation_id": reservation_id,
        "reservation_name": "train-llama",
        "user_id": "alice",
        "gpu_type": "h100",
        "gpu_count": 1,
        "status": "active",
        "occurred_at": "2026-11-27T21:00:00.000000Z",
        "ssh_command": "ssh -p 30022 dev@203.0.113.7",
        "expires_at": "2026-11-27T23:00:00Z",
    }
    detail.update(extra)
    return BusEvent.model_validate(
        {"source": "gpu-dev", "detail-type": detail_type, "detail": detail}
    )


def _notifier(conn: psycopg.Connection[Any], services: ContactServices, rate: int = 30) -> Notifier:
    return Notifier(
        conn=conn,
        vault=services.vault,
        email=services.email,
        slack=SlackWebhook(timeout_seconds=0.3, attempts=2, first_wait_seconds=0.01),
        rate_per_hour=rate,
    )


def _contact(
    conn: psycopg.Connection[Any], services: ContactServices, aws: dict[str, Any], hook: str
) -> str:
    webhook = aws["sink"].webhook(hook, SECRET)
    _put(conn, services, email=ADDRESS, slack_webhook=webhook)
    aws["sink"].verify(ADDRESS)
    return webhook


def test_an_event_is_sent_once_by_each_channel_in_the_users_words(
    autocommit_conn: psycopg.Connection[Any], services: ContactServices, aws: dict[str, Any]
):
    _contact(autocommit_conn, services, aws, "ok")
    event = _event()
    notifier = _notifier(autocommit_conn, services)
    assert notifier.notify(event).sent == ["email", "slack"]
    assert notifier.notify(event).sent == []  # delivered twice: sent once
    (email,) = aws["sink"].emails()
    (post,) = aws["sink"].posts()
    assert email["to"] == ADDRESS
    assert email["subject"] == "gpu-dev: train-llama is ready"
    for text in (email["text"], post.text):
        assert event.detail.reservation_id in text
        assert "ssh -p 30022 dev@203.0.113.7" in text


def test_nothing_is_mailed_to_an_address_ses_has_not_verified(
    autocommit_conn: psycopg.Connection[Any], services: ContactServices, aws: dict[str, Any]
):
    _put(autocommit_conn, services, email=ADDRESS)
    done = _notifier(autocommit_conn, services).notify(_event())
    assert done.sent == [] and aws["sink"].emails() == []


def test_preferences_decide_what_is_sent(
    autocommit_conn: psycopg.Connection[Any], services: ContactServices, aws: dict[str, Any]
):
    _contact(autocommit_conn, services, aws, "ok")
    _put(autocommit_conn, services, events=["warning"], warning_minutes=[5])
    notifier = _notifier(autocommit_conn, services)
    assert notifier.notify(_event()).sent == []
    warning = {"minutes_left": 15}
    assert notifier.notify(_event("Reservation Warning", "w15", **warning)).sent == []
    warning = {"minutes_left": 5}
    assert notifier.notify(_event("Reservation Warning", "w5", **warning)).sent == [
        "email",
        "slack",
    ]
    _put(autocommit_conn, services, enabled=False)
    assert notifier.notify(_event("Reservation Warning", "w5b", **warning)).sent == []


def test_the_idle_warning_is_told_in_the_users_words_as_a_warning_of_any_level(
    autocommit_conn: psycopg.Connection[Any], services: ContactServices, aws: dict[str, Any]
):
    _contact(autocommit_conn, services, aws, "ok")
    _put(autocommit_conn, services, events=["warning"], warning_minutes=[5])
    notifier = _notifier(autocommit_conn, services)
    idle = {"idle_minutes": 120, "ends_at": "2026-11-27T21:30:00Z", "warning": "idle: …"}
    assert notifier.notify(_event("Reservation Idle", "i1", **idle)).sent == ["email", "slack"]
    (email,) = aws["sink"].emails()
    (post,) = aws["sink"].posts()
    assert email["subject"] == "gpu-dev: train-llama is idle and ends at 21:30 UTC"
    for text in (email["text"], post.text):
        assert "your GPUs have been idle for 2 h; the reservation ends at 21:30 UTC" in text
        assert "unless they are used" in text
    _put(autocommit_conn, services, events=["active", "ended"])
    assert notifier.notify(_event("Reservation Idle", "i2", **idle)).sent == []


def test_past_the_rate_a_flapping_reservation_sends_nothing_more(
    autocommit_conn: psycopg.Connection[Any], services: ContactServices, aws: dict[str, Any]
):
    _contact(autocommit_conn, services, aws, "ok")
    notifier = _notifier(autocommit_conn, services, rate=3)
    for number in range(4):
        notifier.notify(_event("Reservation Health", f"h{number}", warning="OOM-killed"))
    assert len(aws["sink"].emails()) + len(aws["sink"].posts()) == 3
    limited = autocommit_conn.execute(
        "SELECT count(*) FROM notification_deliveries WHERE status = 'rate_limited'"
    ).fetchone()
    assert limited == (5,)


@pytest.mark.parametrize("hook", ["fail", "hang"])
def test_a_failing_webhook_fails_the_event_without_resending_the_email(
    autocommit_conn: psycopg.Connection[Any],
    services: ContactServices,
    aws: dict[str, Any],
    hook: str,
):
    _contact(autocommit_conn, services, aws, hook)
    event = _event()
    notifier = _notifier(autocommit_conn, services)
    for _ in range(2):  # the invocation, and Lambda's retry
        with pytest.raises(DeliveryFailed):
            notifier.notify(event)
    assert len(aws["sink"].emails()) == 1
    failed = autocommit_conn.execute(
        "SELECT status, attempts, last_error FROM notification_deliveries WHERE channel = 'slack'"
    ).fetchone()
    assert failed is not None and failed[:2] == ("failed", 2)
    assert SECRET not in failed[2] and "127.0.0.1" not in failed[2]


def test_the_webhook_secret_never_reaches_a_log(
    autocommit_conn: psycopg.Connection[Any],
    services: ContactServices,
    aws: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
):
    caplog.set_level(logging.DEBUG)
    for hook in ("ok", "fail"):
        _contact(autocommit_conn, services, aws, hook)
        notification_settings(autocommit_conn, ALICE, services.email)
        with contextlib.suppress(DeliveryFailed):
            _notifier(autocommit_conn, services).notify(_event(event_id=f"e-{hook}"))
    captured = capsys.readouterr()
    for output in (captured.out, captured.err, caplog.text):
        assert SECRET not in output
