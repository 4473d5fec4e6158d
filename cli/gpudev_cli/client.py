"""Calls the gpu-dev API signed with SigV4 (`execute-api`) from the standard AWS credential
chain (environment, profiles, SSO), through botocore; errors become one clear line."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.exceptions import (
    BotoCoreError,
    NoCredentialsError,
    ProfileNotFound,
    TokenRetrievalError,
)

TIMEOUT_SECONDS = 30
# API Gateway's own 429 body when the stage throttles; our limits say which limit instead.
GATEWAY_THROTTLED = "Too Many Requests"


class CliError(Exception):
    """Printed as one line; the CLI exits non-zero."""


class ApiClient:
    def __init__(self, api_url: str, profile: str | None, region: str | None):
        self.api_url = api_url
        try:
            self._session = boto3.Session(profile_name=profile, region_name=region)
        except ProfileNotFound as exc:
            raise CliError(f"{exc}; list profiles with `aws configure list-profiles`") from None
        self.region = self._session.region_name or "us-east-2"

    def _credentials(self) -> Any:
        try:
            credentials = self._session.get_credentials()
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

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = AWSRequest(
            method=method,
            url=self.api_url + path,
            data=data,
            headers={"Content-Type": "application/json"},
        )
        SigV4Auth(self._credentials(), "execute-api", self.region).add_auth(request)
        prepared = request.prepare()
        http_request = urllib.request.Request(
            prepared.url, data=data, method=method, headers=dict(prepared.headers.items())
        )
        try:
            with urllib.request.urlopen(http_request, timeout=TIMEOUT_SECONDS) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raise CliError(_describe(error)) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            raise CliError(
                f"cannot reach the gpu-dev API at {self.api_url} ({reason}); "
                "check --api-url / GPU_DEV_API_URL"
            ) from None


def _describe(error: urllib.error.HTTPError) -> str:
    try:
        payload = json.loads(error.read() or b"{}")
    except json.JSONDecodeError:
        payload = {}
    message = payload.get("message") or ""
    if error.code == 422 and payload.get("detail"):
        message = "; ".join(
            f"{'.'.join(str(p) for p in d.get('loc', [])[1:])}: {d.get('msg')}"
            for d in payload["detail"]
        )
    if error.code == 403:
        return (
            f"access denied ({message or 'forbidden'}): check that your AWS credentials "
            "are for the gpu-dev account and role"
        )
    if error.code == 429 and message in ("", GATEWAY_THROTTLED):
        return "the gpu-dev API is busy (HTTP 429, throttled): retry in a few seconds"
    return f"{message or error.reason} (HTTP {error.code})"
