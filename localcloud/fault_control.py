"""Outages a running local cloud can be put through, each ending by itself: the database
refusing every connection (an Aurora failover), the Kubernetes API answering 503 (an EKS
control-plane upgrade), an AWS service throttling every call.

`CloudFaults` is the mechanism; tests call it in-process, and `FaultControl` serves it on
loopback to `python -m localcloud.faults` (found through `.local/stack.json`, which holds
its URL and token). Every outage is given a length and ends on a timer in the cloud, so a
tool killed mid-outage leaves nothing broken; the cloud's stop ends any outage first.
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
import time
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from localcloud.aws_throttles import AwsThrottles, signing_name
from localcloud.http import HttpService, LocalHttpServer, RawRequest, Reply

if TYPE_CHECKING:
    from localcloud.kubernetes.server import Faults

TOKEN_HEADER = "x-local-cloud-token"
MAX_SECONDS = 3600.0  # an outage longer than an hour is a mistake, not a test
KINDS = ("database-outage", "kubernetes-outage", "aws-throttle")


class FaultError(ValueError):
    """A fault that cannot be injected as asked; the message says why."""


class CloudFaults:
    def __init__(self, database_url: str, kubernetes: Faults, throttles: AwsThrottles) -> None:
        self._database_url = database_url
        self._database = str(conninfo_to_dict(database_url)["dbname"])
        self._kubernetes = kubernetes
        self._throttles = throttles
        self._lock = threading.Lock()
        self._database_until = 0.0
        self._timers: list[threading.Timer] = []

    def inject(self, kind: str, seconds: float, service: str | None = None) -> None:
        if not 0 < seconds <= MAX_SECONDS:
            raise FaultError(f"--seconds must be more than 0 and at most {MAX_SECONDS:.0f}")
        if kind == "database-outage":
            self.database_outage(seconds)
        elif kind == "kubernetes-outage":
            self._kubernetes.outage(seconds)
        elif kind == "aws-throttle":
            try:
                self._throttles.throttle(signing_name(service or ""), seconds)
            except ValueError as error:
                raise FaultError(str(error)) from error
        else:
            raise FaultError(f"unknown fault {kind!r}; one of {', '.join(KINDS)}")

    def database_outage(self, seconds: float) -> None:
        """Refuse new connections to the database and end the open ones, as a failover does;
        connections are accepted again after `seconds`."""
        with self._lock:
            self._database_until = time.monotonic() + seconds
            self._allow_connections(False)
            timer = threading.Timer(seconds, self._end_database_outage)
            timer.daemon = True
            self._timers.append(timer)
            timer.start()

    def _end_database_outage(self) -> None:
        with self._lock:
            if self._database_until and time.monotonic() >= self._database_until - 0.05:
                self._database_until = 0.0
                self._allow_connections(True)

    def _allow_connections(self, allowed: bool) -> None:
        database = sql.Identifier(self._database)
        with psycopg.connect(
            make_conninfo(self._database_url, dbname="postgres"), autocommit=True
        ) as conn:
            conn.execute(
                sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS {}").format(
                    database, sql.Literal(allowed)
                )
            )
            if not allowed:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = %s AND pid <> pg_backend_pid()",
                    (self._database,),
                )

    def active(self) -> dict[str, float]:
        """Seconds left per fault in force."""
        now = time.monotonic()
        found = {f"aws-throttle {name}": left for name, left in self._throttles.active().items()}
        if self._database_until > now:
            found["database-outage"] = self._database_until - now
        if self._kubernetes.outage_left() > 0:
            found["kubernetes-outage"] = self._kubernetes.outage_left()
        return found

    def clear(self) -> None:
        """End every outage now."""
        with self._lock:
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()
            if self._database_until:
                self._database_until = 0.0
                self._allow_connections(True)
        self._throttles.clear()
        self._kubernetes.outage(0)


class FaultControl(HttpService):
    """`CloudFaults` on loopback for `python -m localcloud.faults`: `POST /faults` with
    `{"fault", "seconds", "service"}`, `GET /faults`, `DELETE /faults`; each with the token
    from stack.json in the `X-Local-Cloud-Token` header."""

    def __init__(self, faults: CloudFaults, port: int = 0) -> None:
        self.faults = faults
        self.token = secrets.token_urlsafe(24)
        self._server = LocalHttpServer(self._handle, "fault-control", port)

    def _handle(self, request: RawRequest) -> Reply:
        given = next((v for k, v in request.headers.items() if k.lower() == TOKEN_HEADER), "")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return _reply(403, {"message": f"the {TOKEN_HEADER} header of stack.json is needed"})
        if request.raw_path != "/faults":
            return _reply(404, {"message": "not found: the control path is /faults"})
        try:
            if request.method == "POST":
                body = _body(request.body)
                self.faults.inject(str(body.get("fault")), _seconds(body), body.get("service"))
            elif request.method == "DELETE":
                self.faults.clear()
            elif request.method != "GET":
                return _reply(405, {"message": "GET, POST or DELETE /faults"})
        except FaultError as error:
            return _reply(400, {"message": str(error)})
        return _reply(200, {"active": self.faults.active()})


def _body(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except ValueError as error:
        raise FaultError("the body is not JSON") from error
    if not isinstance(body, dict):
        raise FaultError("the body is a JSON object")
    return body


def _seconds(body: dict[str, Any]) -> float:
    seconds = body.get("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise FaultError("seconds must be a number")
    return float(seconds)


def _reply(status: int, payload: dict[str, Any]) -> Reply:
    return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()
