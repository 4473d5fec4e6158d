"""The one client of the gpu-dev API. It signs each request with botocore's SigV4
(`execute-api`) using the credentials of an injected botocore session (the standard chain:
environment, profiles, SSO) and sends it with urllib. The CLI calls the API through it, and
so do `python -m localcloud.call`, the tests and `bench/`. The local gateway's verifier
(`localcloud/sigv4.py`) is written independently of it, so the e2e tier proves it right.

botocore is imported when a session is made or a request signed, urllib's HTTP client when a
request is sent, never with the module: `gpu-dev --help` does not pay for them, and nothing
here needs boto3 (bench/cold_start.py).

`call` and `send` return every answer as a `Reply`; `request` is the CLI's: it returns the
body of a successful answer and turns anything else into one clear line (`CliError`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from botocore.credentials import Credentials, ReadOnlyCredentials
    from botocore.session import Session

SERVICE = "execute-api"
DEFAULT_REGION = "us-east-2"
TIMEOUT_SECONDS = 30.0
# API Gateway's own 429 body when the stage throttles; our limits say which limit instead.
GATEWAY_THROTTLED = "Too Many Requests"


class CliError(Exception):
    """Printed as one line; the CLI exits non-zero."""


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
    ):
        self.api_url = api_url
        self.session = session
        self.region = region or session.get_config_variable("region") or DEFAULT_REGION
        self.timeout_seconds = timeout_seconds

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
        self, method: str, path: str, headers: dict[str, str], body: bytes | None = None
    ) -> Reply:
        """Sends exactly what it is given: tests break signed requests with it."""
        import urllib.error
        import urllib.request

        request = urllib.request.Request(
            self.api_url + path, data=body, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_seconds) as response:
                return Reply(response.status, dict(response.headers), _parsed(response.read()))
        except urllib.error.HTTPError as error:
            return Reply(error.code, dict(error.headers), _parsed(error.read()))
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            raise CliError(
                f"cannot reach the gpu-dev API at {self.api_url} ({reason}); "
                "check --api-url / GPU_DEV_API_URL"
            ) from None

    def call(self, method: str, path: str, body: Any = None, signed: bool = True) -> Reply:
        """`body` as JSON, signed with the session's keys (or not at all)."""
        data = json.dumps(body).encode() if body is not None else None
        headers = (
            self.signed_headers(method, path, data)
            if signed
            else {"Content-Type": "application/json"}
        )
        return self.send(method, path, headers, data)

    def request(self, method: str, path: str, body: Any = None) -> Any:
        reply = self.call(method, path, body)
        if reply.status >= 400:
            raise CliError(describe_failure(reply))
        return reply.body


def _parsed(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw.decode(errors="replace")


def describe_failure(reply: Reply) -> str:
    """One line for a failed answer: the API's sentence (every error body is `{"message"}`,
    with a `hint` where one helps), and the status."""
    payload = reply.body if isinstance(reply.body, dict) else {}
    message = payload.get("message") or ""
    if reply.status == 403:
        return (
            f"access denied ({message or 'forbidden'}): check that your AWS credentials "
            "are for the gpu-dev account and role"
        )
    if reply.status == 429 and message in ("", GATEWAY_THROTTLED):
        return "the gpu-dev API is busy (HTTP 429, throttled): retry in a few seconds"
    line = f"{message or _reason(reply)} (HTTP {reply.status})"
    if payload.get("hint"):
        line += f"; hint: {payload['hint']}"
    return line


def _reason(reply: Reply) -> str:
    try:
        return HTTPStatus(reply.status).phrase
    except ValueError:
        return "error"
