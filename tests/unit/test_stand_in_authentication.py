"""The stand-in verifies EKS tokens as EKS does (aws-iam-authenticator's checks, then STS's
signature check with the key's secret) and maps principals through access entries: every
token EKS refuses is 401 Unauthorized, and each refusal is for the right reason."""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from localcloud.kubernetes.access_entries import AccessEntries, AccessEntry, canonical_arn
from localcloud.kubernetes.authentication import Authenticator, InvalidToken, verify_token
from localcloud.kubernetes.store import ObjectStore
from localcloud.sigv4 import SigningKey
from tests.support.kubernetes import TEST_KEY, auth_headers, eks_token, stand_in_server

CLUSTER = "gpudev-local"
SESSION = SigningKey(
    "ASIASESSIONKEY000000",
    "session-secret",
    "arn:aws:sts::111122223333:assumed-role/GpuDevAdmins/carol@example.com",
    "111122223333",
    "AROASESSION:carol@example.com",
    session_token="the-session-token",
    expires_at=dt.datetime(2100, 1, 1, tzinfo=dt.UTC),
)
STRANGER = SigningKey(
    "AKIASTRANGER00000000", "stranger-secret", "arn:aws:iam::111122223333:user/mallory", "", ""
)
KEYS = {k.access_key_id: k for k in (TEST_KEY, SESSION, STRANGER)}


def refusal(token: str, now: dt.datetime | None = None) -> str:
    with pytest.raises(InvalidToken) as refused:
        verify_token(token, CLUSTER, KEYS.get, now)
    return str(refused.value)


def url_of(token: str) -> str:
    encoded = token.removeprefix("k8s-aws-v1.")
    return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()


def token_of(url: str) -> str:
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def with_query(token: str, **changes: str) -> str:
    """The token's URL with query parameters changed (None removes one)."""
    split = urlsplit(url_of(token))
    query = dict(parse_qsl(split.query)) | changes
    query = {k: v for k, v in query.items() if v is not None}
    return token_of(split._replace(query=urlencode(query)).geturl())


@pytest.fixture
def signed_in_2020(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A token correctly signed, on 2020-06-01 (botocore's signing clock set back)."""
    import botocore.auth

    monkeypatch.setattr(
        botocore.auth, "get_current_datetime", lambda: dt.datetime(2020, 6, 1, 12, 0, 0)
    )
    token = eks_token(CLUSTER)
    monkeypatch.undo()
    yield token


def test_a_token_presigned_for_this_cluster_by_a_known_key_is_accepted():
    assert verify_token(eks_token(CLUSTER), CLUSTER, KEYS.get) == TEST_KEY
    assert verify_token(eks_token(CLUSTER, SESSION), CLUSTER, KEYS.get) == SESSION


def test_a_token_for_another_cluster_fails_the_signature_check():
    assert "signature does not match" in refusal(eks_token("someone-elses-cluster"))


def test_a_zeroed_or_altered_signature_is_refused():
    token = eks_token(CLUSTER)
    assert "signature" in refusal(with_query(token, **{"X-Amz-Signature": "0" * 64}))
    assert "signature" in refusal(with_query(token, Version="2011-06-16"))


def test_a_token_signed_in_2020_is_expired(signed_in_2020: str):
    assert "expired" in refusal(signed_in_2020)


def test_a_token_is_valid_fifteen_minutes_after_its_date_whatever_x_amz_expires():
    token = eks_token(CLUSTER)  # presigned with X-Amz-Expires=60
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=14)
    assert verify_token(token, CLUSTER, KEYS.get, soon) == TEST_KEY
    later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=15, seconds=5)
    assert "expired" in refusal(token, later)


def test_a_token_dated_ahead_of_the_clock_skew_is_refused():
    earlier = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=6)
    assert "future" in refusal(eks_token(CLUSTER), earlier)


def test_an_unknown_access_key_is_refused():
    unknown = SigningKey("AKIANOBODY0000000000", "x", "arn:aws:iam::1:user/nobody", "", "")
    assert "unknown" in refusal(eks_token(CLUSTER, unknown))


def test_a_session_key_needs_its_own_unexpired_session_token():
    token = eks_token(CLUSTER, SESSION)
    assert "session token" in refusal(with_query(token, **{"X-Amz-Security-Token": "forged"}))
    ended = SigningKey(**{**vars(SESSION), "expires_at": dt.datetime(2021, 1, 1, tzinfo=dt.UTC)})
    with pytest.raises(InvalidToken, match="expired"):
        verify_token(token, CLUSTER, {SESSION.access_key_id: ended}.get)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"Action": "GetSessionToken"}, "action"),
        ({"X-Amz-SignedHeaders": "host"}, "x-k8s-aws-id"),
        ({"X-Amz-Expires": "901"}, "X-Amz-Expires"),
        ({"X-Amz-Expires": "-1"}, "X-Amz-Expires"),
        ({"X-Amz-Date": None}, "X-Amz-Date"),
        ({"X-Amz-Date": "yesterday"}, "X-Amz-Date"),
        ({"Extra": "1"}, "non-whitelisted"),
    ],
)
def test_malformed_presigned_urls_are_refused_before_any_signature_check(
    change: dict[str, str], reason: str
):
    assert reason in refusal(with_query(eks_token(CLUSTER), **change))


@pytest.mark.parametrize(
    ("rewrite", "reason"),
    [
        (lambda url: url.replace("https://", "http://"), "scheme"),
        (lambda url: url.replace("sts.us-east-2.amazonaws.com", "sts.evil.example"), "hostname"),
        (lambda url: url.replace(".amazonaws.com/?", ".amazonaws.com/x?"), "path"),
        (lambda url: url + "&action=GetCallerIdentity", "duplicate"),
    ],
)
def test_presigned_urls_elsewhere_than_sts_are_refused(rewrite, reason: str):
    assert reason in refusal(token_of(rewrite(url_of(eks_token(CLUSTER)))))


def test_tokens_without_the_prefix_or_too_large_are_refused():
    token = eks_token(CLUSTER)
    assert "prefix" in refusal(token.removeprefix("k8s-aws-v1."))
    assert "too large" in refusal(token + "A" * 4096)
    assert "base64" in refusal("k8s-aws-v1.%%%")


def test_assumed_role_sessions_map_to_their_role_without_its_path():
    role = "arn:aws:iam::111122223333:role/aws-reserved/sso.amazonaws.com/GpuDevAdmins"
    assert canonical_arn(SESSION.principal_arn) == canonical_arn(role)
    entries = AccessEntries.of([AccessEntry(role, kubernetes_groups=("admins",))])
    user = entries.user(SESSION.principal_arn)
    assert user is not None
    assert user.username == SESSION.principal_arn
    assert user.groups == ("admins", "system:authenticated")


def test_one_access_entry_per_principal():
    entries = AccessEntries.of([AccessEntry("arn:aws:iam::111122223333:role/a")])
    with pytest.raises(ValueError, match="already exists"):
        entries.add(AccessEntry("arn:aws:iam::111122223333:role/path/a"))


def test_every_refusal_and_a_principal_without_an_access_entry_are_401_unauthorized():
    refused: list[str] = []
    authenticator = Authenticator(
        CLUSTER,
        KEYS.get,
        AccessEntries.of([AccessEntry(TEST_KEY.principal_arn, kubernetes_groups=("g",))]),
        refused.append,
    )
    server = stand_in_server(ObjectStore(), CLUSTER)
    server.authenticator = authenticator
    assert server.handle("GET", "/version", auth_headers(CLUSTER), b"")[0] == 200
    for headers in (
        auth_headers("another-cluster"),
        auth_headers(CLUSTER, STRANGER),  # a valid key, but no access entry
        {"Authorization": "Bearer k8s-aws-v1.bm90LWEtdG9rZW4"},
        {"Authorization": "Basic YWxpY2U6cGFzc3dvcmQ="},
        {},
    ):
        status, body = server.handle("GET", "/api/v1/pods", headers, b"")
        assert (status, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")
    assert "no access entry maps arn:aws:iam::111122223333:user/mallory" in refused


def presigned(host: str, region: str) -> str:
    """A token correctly signed by TEST_KEY for `host`, its credential scoped to `region`."""
    from botocore.auth import SigV4QueryAuth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    request = AWSRequest(
        "GET",
        f"https://{host}/?Action=GetCallerIdentity&Version=2011-06-15",
        headers={"x-k8s-aws-id": CLUSTER},
    )
    credentials = Credentials(TEST_KEY.access_key_id, TEST_KEY.secret_access_key)
    SigV4QueryAuth(credentials, "sts", region, expires=60).add_auth(request)
    return token_of(request.url)


@pytest.mark.parametrize(
    ("host", "region"),
    [
        ("sts.eu-west-1.amazonaws.com", "eu-west-1"),
        ("sts.amazonaws.com", "us-east-1"),  # the global endpoint is us-east-1
    ],
)
def test_a_credential_scoped_to_the_endpoints_region_is_accepted(host: str, region: str):
    assert verify_token(presigned(host, region), CLUSTER, KEYS.get) == TEST_KEY


@pytest.mark.parametrize(
    ("host", "region"),
    [
        ("sts.eu-west-1.amazonaws.com", "us-east-2"),
        ("sts.amazonaws.com", "us-east-2"),
    ],
)
def test_a_credential_scoped_to_another_region_than_the_endpoints_is_refused(
    host: str, region: str
):
    """STS refuses a signature whose scope names another region than the endpoint's."""
    assert "scoped to 'us-east-2'" in refusal(presigned(host, region))
