"""Verifies SigV4 (`execute-api`) signatures as API Gateway's AWS_IAM auth does.

The signature is recomputed with botocore from the raw request as it came off the wire
(method, undecoded path and query, the signed headers only, body) and compared in constant
time. Rejections carry API Gateway's 403 messages, so clients see what they would in AWS.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

SERVICE = "execute-api"
MAX_SKEW = timedelta(minutes=5)
_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<credential>[^,\s]+),\s*"
    r"SignedHeaders=(?P<signed>[^,\s]+),\s*Signature=(?P<signature>[0-9a-f]{64})$"
)


@dataclass(frozen=True)
class SigningKey:
    access_key_id: str
    secret_access_key: str
    principal_arn: str
    account_id: str
    user_id: str
    session_token: str | None = None  # temporary credentials (STS) only
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Rejection(Exception):
    error_type: str
    message: str

    def __str__(self) -> str:
        return f"{self.error_type}: {self.message}"


MISSING_TOKEN = Rejection("MissingAuthenticationTokenException", "Missing Authentication Token")
INVALID_TOKEN = Rejection(
    "UnrecognizedClientException", "The security token included in the request is invalid."
)
EXPIRED_TOKEN = Rejection(
    "ExpiredTokenException", "The security token included in the request is expired"
)
BAD_SIGNATURE = Rejection(
    "InvalidSignatureException",
    "The request signature we calculated does not match the signature you provided. Check "
    "your AWS Secret Access Key and signing method. Consult the service documentation for "
    "details.",
)


def verify(
    *,
    method: str,
    raw_path: str,
    headers: Mapping[str, str],
    body: bytes,
    region: str,
    lookup_key: Callable[[str], SigningKey | None],
    now: datetime | None = None,
) -> SigningKey:
    """The key that signed the request, or a Rejection saying why it is refused."""
    lowered = {name.lower(): value for name, value in headers.items()}
    authorization = lowered.get("authorization")
    if not authorization:
        raise MISSING_TOKEN
    match = _AUTHORIZATION.match(authorization.strip())
    if not match:
        raise Rejection(
            "IncompleteSignatureException",
            "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' "
            f"parameters. Authorization={authorization}",
        )
    scope = match["credential"].split("/")
    signed_headers = match["signed"].split(";")
    amz_date = lowered.get("x-amz-date", "")
    if len(scope) != 5 or scope[4] != "aws4_request":
        raise Rejection("IncompleteSignatureException", "Credential should be scoped correctly.")
    access_key_id, date, scope_region, service, _ = scope
    if "host" not in signed_headers or "x-amz-date" not in signed_headers or not amz_date:
        raise Rejection(
            "IncompleteSignatureException",
            "'Host' and 'X-Amz-Date' must be signed headers.",
        )
    if service != SERVICE:
        raise Rejection(
            "InvalidSignatureException",
            f"Credential should be scoped to correct service: '{SERVICE}'.",
        )
    if scope_region != region:
        raise Rejection(
            "InvalidSignatureException",
            f"Credential should be scoped to a valid region, not '{scope_region}'.",
        )
    try:
        signed_at = datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise Rejection("IncompleteSignatureException", "Invalid X-Amz-Date.") from None
    if date != amz_date[:8]:
        raise Rejection("InvalidSignatureException", "Credential date does not match X-Amz-Date.")
    now = now or datetime.now(UTC)
    if abs(now - signed_at) > MAX_SKEW:
        raise Rejection(
            "InvalidSignatureException",
            f"Signature expired: {amz_date} is now earlier than "
            f"{(now - MAX_SKEW).strftime('%Y%m%dT%H%M%SZ')} "
            f"({now.strftime('%Y%m%dT%H%M%SZ')} - 5 min.)",
        )
    key = lookup_key(access_key_id)
    if key is None:
        raise INVALID_TOKEN
    _check_session_token(key, lowered.get("x-amz-security-token"), now)

    host = lowered.get("host", "")
    request = AWSRequest(
        method=method,
        url=f"http://{host}{raw_path}",
        headers={name: lowered.get(name, "") for name in signed_headers},
        data=body,
    )
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(
        Credentials(key.access_key_id, key.secret_access_key, key.session_token),
        SERVICE,
        region,
    )
    expected = signer.signature(
        signer.string_to_sign(request, signer.canonical_request(request)), request
    )
    if not hmac.compare_digest(expected, match["signature"]):
        raise BAD_SIGNATURE
    return key


def _check_session_token(key: SigningKey, token: str | None, now: datetime) -> None:
    """Temporary credentials are valid only with their own session token and until they
    expire; a long-term key (an IAM user's) must come without one."""
    if key.session_token is None:
        if token is not None:
            raise INVALID_TOKEN
        return
    if token is None or not hmac.compare_digest(token.encode(), key.session_token.encode()):
        raise INVALID_TOKEN
    if key.expires_at is not None and now >= key.expires_at:
        raise EXPIRED_TOKEN
