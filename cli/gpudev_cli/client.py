"""The one client of the gpu-dev API. It signs each request with botocore's SigV4
(`execute-api`) using the credentials of an injected botocore session (the standard chain:
environment, profiles, SSO) and sends it with urllib. The CLI calls the API through it, and
so do `python -m localcloud.call`, the tests and `bench/`. The local gateway's verifier
(`localcloud/sigv4.py`) is written independently of it, so the e2e tier proves it right.

botocore is imported when a session is made or a request signed, the HTTP client when a
request is sent, never with the module: `gpu-dev --help` does not pay for them, and nothing
here needs boto3 (bench/cold_start.py). A client keeps its connection open between requests
(HTTP/1.1 keep-alive, as botocore's clients do): `--watch` and `reserve`'s wait pay one TCP
and TLS handshake, not one per request. It goes through the proxy the environment names
(`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`), as urllib and botocore do.

`call` and `send` return every answer as a `Reply`; `request` is the CLI's: it returns the
body of a successful answer and turns anything else into one clear line (`CliError`), after
waiting out a 429 (or a 503 with Retry-After) a few times (`throttling.py`) when repeating
the request is harmless; `failures.py` words the line."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpudev_cli.failures import describe_failure
from gpudev_cli.http_route import route_to
from gpudev_cli.throttling import THROTTLE_RETRIES, say_on_stderr, throttled_wait

# Methods whose repetition changes nothing more (RFC 9110 §9.2.2): resent after a lost answer.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})

if TYPE_CHECKING:
    from http.client import HTTPConnection

    from botocore.credentials import Credentials, ReadOnlyCredentials
    from botocore.session import Session

SERVICE = "execute-api"
DEFAULT_REGION = "us-east-2"
TIMEOUT_SECONDS = 30.0


class CliError(Exception):
    """Printed as one line; the CLI exits non-zero."""


class TryAgainLater(CliError):
    """Still throttled after the waits: `logs --follow` waits longer and asks again."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: Any  # the JSON answer; its text when it is not JSON; None when empty


def session_for(
    profile: str | None, region: str | None, credentials_file: Path | None = None
) -> Session:
    """A botocore session of the standard credential chain, as `profile` when given (a
    missing profile is refused here, as boto3.Session refuses it). `credentials_file`
    replaces ~/.aws/credentials for this session only (AWS_SHARED_CREDENTIALS_FILE does it
    for the whole process)."""
    import botocore.session
    from botocore.exceptions import ProfileNotFound

    session = botocore.session.Session(profile=profile)
    if credentials_file is not None:
        session.set_config_variable("credentials_file", str(credentials_file))
    if region is not None:
        session.set_config_variable("region", region)
    try:
        session.get_scoped_config()
    except ProfileNotFound as exc:
        raise CliError(f"{exc}; list profiles with `aws configure list-profiles`") from None
    return session


class SigV4Client:
    def __init__(
        self,
        api_url: str,
        session: Session,
        region: str | None = None,
        timeout_seconds: float | None = TIMEOUT_SECONDS,
        *,
        sleep: Callable[[float], None] = time.sleep,
        say: Callable[[str], None] = say_on_stderr,
    ):
        self.api_url = api_url
        self._sleep = sleep  # seams for tests: waiting and the line said while waiting
        self._say = say
        self.session = session
        self.region = region or session.get_config_variable("region") or DEFAULT_REGION
        self.timeout_seconds = timeout_seconds
        self._kept = threading.local()  # each thread its own connection: one request at a time

    def credentials(self) -> ReadOnlyCredentials:
        """The session's current keys (refreshed when they are temporary)."""
        from botocore.exceptions import BotoCoreError, NoCredentialsError, TokenRetrievalError

        try:
            credentials = self.session.get_credentials()
        except TokenRetrievalError:
            raise CliError("your AWS SSO session has expired: run `aws sso login`") from None
        except BotoCoreError as exc:
            raise CliError(f"could not load AWS credentials: {exc}") from None
        if credentials is None:
            raise CliError(
                "no AWS credentials found: set AWS_PROFILE, run `aws configure` or `aws sso login`"
            )
        try:
            return credentials.get_frozen_credentials()
        except (NoCredentialsError, TokenRetrievalError):
            raise CliError("your AWS credentials could not be refreshed: log in again") from None

    def signed_headers(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        credentials: Credentials | ReadOnlyCredentials | None = None,
        service: str = SERVICE,
        extra_headers: dict[str, str] | None = None,
    ) -> dict[str, str]:
        """The headers to send, signed with the session's keys unless `credentials` are given;
        `extra_headers` are signed too (botocore signs an `X-Amz-Content-SHA256` given here
        with its value as the payload hash)."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(
            method=method,
            url=self.api_url + path,
            data=body,
            headers={"Content-Type": "application/json", **(extra_headers or {})},
        )
        SigV4Auth(credentials or self.credentials(), service, self.region).add_auth(request)
        return dict(request.headers.items())

    def send(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes | None = None,
        *,
        repeatable: bool | None = None,
    ) -> Reply:
        """Sends exactly what it is given: tests break signed requests with it. The connection
        stays open for the next request; one the server closed while it was idle is replaced
        before it is used. A request a kept connection lost unanswered may still have been
        applied, so only a `repeatable` one (by default: an idempotent method, GET, PUT,
        DELETE) is sent once more, on a new connection; another lost POST (an extension adds
        hours) is an error that says so."""
        import http.client

        kept = self._kept_connection()
        reused = kept is not None and not _closed_by_peer(kept)
        if not reused:
            self.close()
        try:
            try:
                return self._exchange(method, path, headers, body)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if not reused:
                    raise
                if not (method in IDEMPOTENT_METHODS if repeatable is None else repeatable):
                    raise CliError(
                        f"the connection to the gpu-dev API was lost before it answered {method} "
                        f"{path}; it may have been applied: check (e.g. `gpu-dev list`) before "
                        "trying again"
                    ) from None
                return self._exchange(method, path, headers, body)
        except (OSError, http.client.HTTPException) as error:
            self.close()
            reason = getattr(error, "reason", None) or error
            raise CliError(
                f"cannot reach the gpu-dev API at {self.api_url} ({reason}); "
                "check --api-url / GPU_DEV_API_URL"
            ) from None

    def _exchange(
        self, method: str, path: str, headers: dict[str, str], body: bytes | None
    ) -> Reply:
        connection = self._kept_connection()
        if connection is None:
            try:
                route = route_to(self.api_url)
            except ValueError as error:
                raise CliError(str(error)) from None
            connection = self._kept.connection = route.connect(self.timeout_seconds)
            self._kept.route = route
        route = self._kept.route
        connection.request(
            method, route.target_prefix + path, body=body, headers=headers | route.headers
        )
        response = connection.getresponse()
        data = response.read()
        if response.will_close:
            self.close()
        return Reply(response.status, dict(response.headers), _parsed(data))

    def _kept_connection(self) -> HTTPConnection | None:
        connection: HTTPConnection | None = getattr(self._kept, "connection", None)
        return connection

    def close(self) -> None:
        """Close this thread's kept connection, if any (its next request opens a new one)."""
        connection = self._kept_connection()
        if connection is not None:
            connection.close()
            self._kept.connection = None

    def call(self, method: str, path: str, body: Any = None, signed: bool = True) -> Reply:
        """`body` as JSON, signed with the session's keys (or not at all). A body carrying a
        `client_request_id` (reserve's) is repeatable: the API applies it once however often
        it arrives."""
        data = json.dumps(body).encode() if body is not None else None
        headers = (
            self.signed_headers(method, path, data)
            if signed
            else {"Content-Type": "application/json"}
        )
        keyed = isinstance(body, dict) and "client_request_id" in body
        return self.send(method, path, headers, data, repeatable=True if keyed else None)

    def request(self, method: str, path: str, body: Any = None) -> Any:
        repeatable = method in IDEMPOTENT_METHODS or (
            isinstance(body, dict) and "client_request_id" in body
        )
        reply = self.call(method, path, body)
        for attempt in range(1, THROTTLE_RETRIES + 1):
            wait = throttled_wait(reply, attempt)
            if not repeatable or wait is None:
                break
            self._say(
                f"the gpu-dev API asks to slow down: waiting {wait:g} s, then trying again "
                f"({attempt}/{THROTTLE_RETRIES})"
            )
            self._sleep(wait)
            reply = self.call(method, path, body)  # signed anew: a signature lasts 5 minutes
        if reply.status >= 400:
            again = repeatable and throttled_wait(reply, THROTTLE_RETRIES) is not None
            raise (TryAgainLater if again else CliError)(describe_failure(reply))
        return reply.body


def _closed_by_peer(connection: HTTPConnection) -> bool:
    """Whether an idle kept connection is readable: the server closed it (or sent what an
    idle HTTP/1.1 connection never gets). Either way it is not used again."""
    import select

    if connection.sock is None:
        return True
    try:
        readable, _, _ = select.select([connection.sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _parsed(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw.decode(errors="replace")
