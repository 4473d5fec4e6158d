"""What the notifier needs locally, and one place that shows what it sent.

- The webhook sink: Slack's incoming webhooks stand-in on loopback. A post to
  `/hooks/<behaviour>/<anything>` is recorded and answered as `<behaviour>` says: `ok` 200,
  `fail` 500, `hang` nothing for `hang_seconds` (longer than the notifier waits).
  Its prefix is among the notifier's allowed webhook prefixes here (NOTIFY_WEBHOOK_PREFIXES).
- SES is moto's: the sender's identity is created and verified at start (as the operator
  does once by SES's link), recipients' identities stay unverified until `verify` (the link
  SES would mail them); the e-mails sent are moto's `sent_messages`, read in this process.
- The KMS key that seals webhook URLs is moto's.
- `GET /outbox` answers what was sent (e-mails and posts, each with its recipient, subject or
  text, reservation id and event), `POST /verify` with `{"address"}` verifies an address;
  `python -m localcloud.outbox` reads them (the URL is in stack.json).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from moto.ses.models import ses_backends

from localcloud.http import HttpService, LocalHttpServer, RawRequest, Reply
from localcloud.lambdas import ACCOUNT_ID

SENDER = "gpu-dev-notifications@local.example"
HOOKS = "/hooks/"
BEHAVIOURS = ("ok", "fail", "hang")
# The reservation id and the event a message is about, as the notifier's texts carry them.
_RESERVATION_ID = re.compile(r"\(([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}),")
_EVENT_OF_SUBJECT = (
    ("is queued", "queued"),
    ("is ready", "active"),
    ("expires in", "warning"),
    ("is idle", "idle"),
    ("expired", "expired"),
    ("was cancelled", "cancelled"),
    ("failed", "failed"),
    ("needs a look", "health"),
)


@dataclass
class Post:
    path: str
    text: str
    status: int
    at: float = field(default_factory=time.time)


class NotificationSink(HttpService):
    def __init__(self, region: str, hang_seconds: float = 30.0, port: int = 0) -> None:
        self._region = region
        self._hang_seconds = hang_seconds
        self._posts: list[Post] = []
        self._lock = threading.Lock()
        self._server = LocalHttpServer(self._handle, "notification-sink", port)

    @property
    def hooks_url(self) -> str:
        return f"{self.url}{HOOKS}"

    def webhook(self, behaviour: str = "ok", name: str = "T000/B000/local") -> str:
        """A webhook URL of the sink that answers as `behaviour` says."""
        assert behaviour in BEHAVIOURS, behaviour
        return f"{self.hooks_url}{behaviour}/{name}"

    def posts(self) -> list[Post]:
        with self._lock:
            return list(self._posts)

    def emails(self) -> list[dict[str, Any]]:
        backend = ses_backends[ACCOUNT_ID][self._region]
        return [
            {
                "to": ", ".join(m.destinations.get("ToAddresses", [])),
                "subject": m.subject,
                "text": m.body,
            }
            for m in list(backend.sent_messages)
            if hasattr(m, "subject")
        ]

    def verify(self, address: str) -> bool:
        """What the link SES mails to a new address does: its identity becomes verified."""
        identity = ses_backends[ACCOUNT_ID][self._region].email_identities.get(address)
        if identity is None:
            return False
        identity.verified_for_sending_status = True
        return True

    def outbox(self) -> list[dict[str, Any]]:
        """Every e-mail and post sent, oldest first within each channel."""
        sent = [
            {"channel": "email", "recipient": e["to"], "subject": e["subject"], "text": e["text"]}
            for e in self.emails()
        ]
        sent += [
            {"channel": "slack", "recipient": p.path, "subject": None, "text": p.text}
            for p in self.posts()
            if p.status == 200
        ]
        for item in sent:
            headline = item["subject"] or item["text"].split("\n", 1)[0]
            item.update(_about(headline, item["text"]))
        return sent

    def _handle(self, request: RawRequest) -> Reply:
        path = unquote(request.raw_path.split("?", 1)[0])
        if request.method == "POST" and path.startswith(HOOKS):
            return self._hook(path, request.body)
        if request.method == "GET" and path == "/outbox":
            return _reply(200, {"sent": self.outbox()})
        if request.method == "POST" and path == "/verify":
            address = str(json.loads(request.body or b"{}").get("address", ""))
            verified = self.verify(address)
            return _reply(200 if verified else 404, {"address": address, "verified": verified})
        return _reply(404, {"message": "POST /hooks/<ok|fail|hang>/..., GET /outbox, POST /verify"})

    def _hook(self, path: str, body: bytes) -> Reply:
        behaviour = path[len(HOOKS) :].split("/", 1)[0]
        if behaviour not in BEHAVIOURS:
            return _reply(404, {"message": "no such webhook"})
        try:
            text = str(json.loads(body).get("text", ""))
        except (ValueError, AttributeError):
            return _reply(400, {"message": "invalid_payload"})
        if behaviour == "hang":
            time.sleep(self._hang_seconds)
        # A hung post is recorded with no status: its client gave up long before.
        status = {"ok": 200, "fail": 500, "hang": 0}[behaviour]
        with self._lock:
            self._posts.append(Post(path, text, status))
        return status, {"Content-Type": "text/plain"}, b"ok" if status == 200 else b"error"


def _about(subject: str, text: str) -> dict[str, str | None]:
    found = _RESERVATION_ID.search(text)
    event = next((name for words, name in _EVENT_OF_SUBJECT if words in subject), None)
    return {"reservation_id": found[1] if found else None, "event": event}


def _reply(status: int, payload: dict[str, Any]) -> Reply:
    return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()


def prepare(client: Any, sink: NotificationSink) -> dict[str, str]:
    """The KMS key and the verified sender in moto; the notifier's environment."""
    key_id = client("kms").create_key(Description="gpu-dev notifications (local)")["KeyMetadata"][
        "KeyId"
    ]
    client("sesv2").create_email_identity(EmailIdentity=SENDER)
    sink.verify(SENDER)
    return {
        "NOTIFY_KEY_ID": key_id,
        "NOTIFY_SENDER": SENDER,
        "NOTIFY_WEBHOOK_PREFIXES": f"https://hooks.slack.com/services/,{sink.hooks_url}",
    }
