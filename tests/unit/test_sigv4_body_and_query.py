"""The local gateway's SigV4 check binds the body and the query as API Gateway does: the
payload hash is always the received body's (an `x-amz-content-sha256` header never stands in
for it, and one that differs from it is refused), repeated query names verify in any order
and reach the handler in the order sent, and header names and values are canonicalised."""

from __future__ import annotations

import hashlib

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from localcloud.gateway import proxy_event
from localcloud.sigv4 import BAD_SIGNATURE, Rejection, SigningKey, verify

REGION = "us-east-2"
HOST = "127.0.0.1:8000"
KEY = SigningKey(
    "AKIAEXAMPLEUSER00001",
    "user-secret",
    "arn:aws:iam::123456789012:user/alice",
    "123456789012",
    "AIDAEXAMPLE",
)
BODY = b'{"gpu_type": "h100", "gpu_count": 1, "hours": 2}'
TAMPERED = b'{"gpu_type": "h100", "gpu_count": 8, "hours": 24}'


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _signed(
    method: str, path: str, body: bytes, headers: dict[str, str] | None = None
) -> dict[str, str]:
    """Signed by botocore as the CLI signs: a header given here is signed with the request
    (botocore hashes an `X-Amz-Content-SHA256` header's value, not the body, when present)."""
    request = AWSRequest(method=method, url=f"http://{HOST}{path}", data=body, headers=headers)
    SigV4Auth(
        Credentials(KEY.access_key_id, KEY.secret_access_key), "execute-api", REGION
    ).add_auth(request)
    return dict(request.headers.items())


def _verify(method: str, path: str, headers: dict[str, str], body: bytes) -> SigningKey:
    return verify(
        method=method,
        raw_path=path,
        headers=headers | {"Host": HOST},
        body=body,
        region=REGION,
        lookup_key={KEY.access_key_id: KEY}.get,
    )


def _refused(method: str, path: str, headers: dict[str, str], body: bytes) -> Rejection:
    with pytest.raises(Rejection) as refused:
        _verify(method, path, headers, body)
    return refused.value


def _signed_content_hash(value: str) -> dict[str, str]:
    return _signed("POST", "/v1/reservations", BODY, {"X-Amz-Content-SHA256": value})


# The body


def test_a_body_signed_without_a_content_hash_header_is_accepted():
    headers = _signed("POST", "/v1/reservations", BODY)
    assert "X-Amz-Content-SHA256" not in headers  # botocore's default for execute-api
    assert _verify("POST", "/v1/reservations", headers, BODY) == KEY


def test_a_body_signed_with_its_own_content_hash_header_is_accepted():
    headers = _signed_content_hash(_sha256(BODY))
    assert "x-amz-content-sha256" in headers["Authorization"]
    assert _verify("POST", "/v1/reservations", headers, BODY) == KEY


def test_a_tampered_body_is_refused_without_a_content_hash_header():
    headers = _signed("POST", "/v1/reservations", BODY)
    assert _refused("POST", "/v1/reservations", headers, TAMPERED).error_type == (
        BAD_SIGNATURE.error_type
    )


def test_a_tampered_body_is_refused_although_the_signed_content_hash_still_holds():
    # The signature and the signed header are untouched: only the body changed. A verifier
    # that hashed the header's value instead of the body let this through.
    headers = _signed_content_hash(_sha256(BODY))
    refused = _refused("POST", "/v1/reservations", headers, TAMPERED)
    assert refused.error_type == "InvalidSignatureException"
    assert refused.message.startswith(BAD_SIGNATURE.message)


@pytest.mark.parametrize(
    "claimed",
    [_sha256(b"another body"), "UNSIGNED-PAYLOAD", _sha256(BODY).upper()],
    ids=["another-hash", "unsigned-payload", "upper-case-hex"],
)
def test_a_signed_content_hash_that_is_not_the_bodys_is_refused(claimed: str):
    # botocore signs with the header's value as the payload hash, so the signature is
    # self-consistent; execute-api still hashes the body it received and refuses it.
    refused = _refused("POST", "/v1/reservations", _signed_content_hash(claimed), BODY)
    assert refused.error_type == "InvalidSignatureException"
    assert refused.message.startswith(BAD_SIGNATURE.message)


def test_an_unsigned_content_hash_header_must_still_be_the_bodys():
    headers = _signed("POST", "/v1/reservations", BODY)
    with_own_hash = headers | {"x-amz-content-sha256": _sha256(BODY)}
    assert _verify("POST", "/v1/reservations", with_own_hash, BODY) == KEY
    for claimed in (_sha256(TAMPERED), "UNSIGNED-PAYLOAD"):
        claims_another = headers | {"x-amz-content-sha256": claimed}
        assert _refused("POST", "/v1/reservations", claims_another, BODY).error_type == (
            "InvalidSignatureException"
        )


def test_the_refusal_shows_the_canonical_request_computed_over_the_body():
    headers = _signed_content_hash(_sha256(BODY))
    message = _refused("POST", "/v1/reservations", headers, TAMPERED).message
    canonical = message.split("should have been\n'", 1)[1].split("'\n", 1)[0]
    assert canonical.startswith("POST\n/v1/reservations\n\n")
    assert canonical.endswith(f"\n{_sha256(TAMPERED)}")
    assert f"x-amz-content-sha256:{_sha256(BODY)}\n" in canonical
    assert "The String-to-Sign should have been\n'AWS4-HMAC-SHA256\n" in message


def test_an_empty_body_hashes_as_empty():
    headers = _signed("GET", "/v1/me", b"")
    assert _verify("GET", "/v1/me", headers, b"") == KEY
    assert _refused("GET", "/v1/me", headers, b"{}").error_type == "InvalidSignatureException"


# The query


@pytest.mark.parametrize(
    ("signed", "sent"),
    [
        ("?status=active&status=queued", "?status=active&status=queued"),
        ("?status=queued&status=active&limit=500", "?status=queued&status=active&limit=500"),
        # canonical order is by name, then by value: reordering on the way does not matter
        ("?status=queued&status=active", "?status=active&status=queued"),
    ],
)
def test_repeated_query_names_verify_in_any_order(signed: str, sent: str):
    headers = _signed("GET", f"/v1/reservations{signed}", b"")
    assert _verify("GET", f"/v1/reservations{sent}", headers, b"") == KEY


@pytest.mark.parametrize(
    "sent",
    [
        "?status=active",
        "?status=active&status=queued&status=queued",
        "?status=active&status=failed",
        "?status=active&state=queued",
    ],
)
def test_a_changed_repeated_query_is_refused(sent: str):
    headers = _signed("GET", "/v1/reservations?status=active&status=queued", b"")
    assert _refused("GET", f"/v1/reservations{sent}", headers, b"").error_type == (
        "InvalidSignatureException"
    )


def test_repeated_query_names_reach_the_handler_in_the_order_sent():
    event = proxy_event(
        "GET",
        "/v1/reservations?status=queued&status=active&limit=500",
        {"Host": HOST},
        b"",
        KEY,
        "127.0.0.1",
    )
    assert event["multiValueQueryStringParameters"] == {
        "status": ["queued", "active"],
        "limit": ["500"],
    }
    # the single-value map keeps the last value, as API Gateway's does
    assert event["queryStringParameters"] == {"status": "active", "limit": "500"}


# Headers


def test_signed_header_names_are_case_insensitive_and_values_are_trimmed():
    headers = _signed(
        "POST", "/v1/reservations", BODY, {"Content-Type": "application/json", "X-Note": "a  b"}
    )
    sent = {name.upper(): value for name, value in headers.items()}
    sent["X-NOTE"] = "   a b  "
    assert _verify("POST", "/v1/reservations", sent, BODY) == KEY
    sent["X-NOTE"] = "a b c"
    assert _refused("POST", "/v1/reservations", sent, BODY).error_type == (
        "InvalidSignatureException"
    )


def test_only_the_signed_headers_count():
    headers = _signed("GET", "/v1/me", b"")
    extra = headers | {"User-Agent": "curl/8", "X-Forwarded-For": "10.0.0.1"}
    assert _verify("GET", "/v1/me", extra, b"") == KEY
