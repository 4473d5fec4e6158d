"""The local gateway's SigV4 check of temporary credentials: a session's key is accepted only
with its own session token and before it expires; a long-term key comes without one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from localcloud.sigv4 import EXPIRED_TOKEN, INVALID_TOKEN, Rejection, SigningKey, verify

REGION = "us-east-2"
URL = "http://127.0.0.1:8000/v1/me"
SESSION = SigningKey(
    "ASIAEXAMPLESESSION01",
    "session-secret",
    "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_GpuDevUsers_5f2c4e8a9b3d1c07/carol@example.com",
    "123456789012",
    "AROAEXAMPLE:carol@example.com",
    session_token="the-session-token",
    expires_at=datetime.now(UTC) + timedelta(hours=12),
)
USER = SigningKey(
    "AKIAEXAMPLEUSER00001",
    "user-secret",
    "arn:aws:iam::123456789012:user/alice",
    "123456789012",
    "AIDAEXAMPLE",
)


def _signed(key: SigningKey, token: str | None) -> dict[str, str]:
    request = AWSRequest(method="GET", url=URL)
    credentials = Credentials(key.access_key_id, key.secret_access_key, token)
    SigV4Auth(credentials, "execute-api", REGION).add_auth(request)
    return dict(request.headers.items())


def _verify(key: SigningKey, headers: dict[str, str]) -> SigningKey:
    return verify(
        method="GET",
        raw_path="/v1/me",
        headers=headers | {"Host": "127.0.0.1:8000"},
        body=b"",
        region=REGION,
        lookup_key={key.access_key_id: key}.get,
    )


def test_a_session_key_with_its_token_is_accepted():
    assert _verify(SESSION, _signed(SESSION, SESSION.session_token)) == SESSION


@pytest.mark.parametrize(
    "sign",
    [
        lambda: _signed(SESSION, None),
        lambda: _signed(SESSION, "another-sessions-token"),
        lambda: _signed(SESSION, SESSION.session_token) | {"X-Amz-Security-Token": "tampered"},
    ],
    ids=["missing", "wrong", "tampered-after-signing"],
)
def test_a_session_key_without_its_own_token_is_invalid(sign: Callable[[], dict[str, str]]):
    # signed when the test runs, not at collection: the gateway allows 5 minutes of skew
    with pytest.raises(Rejection) as refused:
        _verify(SESSION, sign())
    assert refused.value == INVALID_TOKEN


def test_an_expired_session_is_refused_as_expired():
    expired = replace(SESSION, expires_at=datetime.now(UTC) - timedelta(seconds=1))
    with pytest.raises(Rejection) as refused:
        _verify(expired, _signed(expired, expired.session_token))
    assert refused.value == EXPIRED_TOKEN


def test_a_long_term_key_is_accepted_without_a_token_and_refused_with_one():
    assert _verify(USER, _signed(USER, None)) == USER
    with pytest.raises(Rejection) as refused:
        _verify(USER, _signed(USER, "a-token"))
    assert refused.value == INVALID_TOKEN
