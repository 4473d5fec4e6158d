"""Verifies SigV4 (`execute-api`) signatures as API Gateway's AWS_IAM auth does.

The canonical request is rebuilt from the raw request as it came off the wire (method,
undecoded path and query, exactly the headers named in `SignedHeaders`, the SHA-256 of the
body as received), botocore derives the signature from it, and the two are compared in
constant time. The payload hash is always the body's: an `x-amz-content-sha256` header cannot
stand in for it, and one that differs from it is refused. Rejections carry API Gateway's 403
messages, so clients see what they would in AWS.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from hashlib import sha256
from urllib.parse import quote, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.utils import normalize_url_path

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

    body_hash = sha256(body).hexdigest()
    canonical = canonical_request(method, raw_path, lowered, signed_headers, body_hash)
    request = AWSRequest(method=method, url=f"http://{lowered.get('host', '')}{raw_path}")
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(
        Credentials(key.access_key_id, key.secret_access_key, key.session_token),
        SERVICE,
        region,
    )
    string_to_sign = signer.string_to_sign(request, canonical)
    expected = signer.signature(string_to_sign, request)
    # API Gateway hashes the body it received, whatever the request claims: a claimed hash
    # (signed or not, `UNSIGNED-PAYLOAD` included) that is not the body's is refused too.
    claimed = lowered.get("x-amz-content-sha256")
    if (claimed is not None and claimed != body_hash) or not hmac.compare_digest(
        expected, match["signature"]
    ):
        raise signature_mismatch(canonical, string_to_sign)
    return key


def canonical_request(
    method: str,
    raw_path: str,
    headers: Mapping[str, str],
    signed_headers: list[str],
    body_hash: str,
) -> str:
    """SigV4's canonical request as the verifier builds it: the wire path and query, exactly
    the headers the signature names (lower-case names, values trimmed with inner runs of
    white space folded to one space), and the hash of the body as received, never the
    `x-amz-content-sha256` header's value."""
    split = urlsplit(raw_path)
    lowered = {name.lower(): value for name, value in headers.items()}
    canonical_headers = "".join(
        f"{name}:{' '.join(lowered.get(name, '').split())}\n" for name in signed_headers
    )
    return "\n".join(
        [
            method.upper(),
            quote(normalize_url_path(split.path), safe="/~"),
            canonical_query_string(split.query),
            canonical_headers,
            ";".join(signed_headers),
            body_hash,
        ]
    )


def canonical_query_string(query: str) -> str:
    """Pairs as on the wire (still encoded), sorted by name and then by value, so repeated
    names (`status=queued&status=active`) canonicalise the same whatever their order."""
    if not query:
        return ""
    pairs = []
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        pairs.append((name, value))
    return "&".join(f"{name}={value}" for name, value in sorted(pairs))


def signature_mismatch(canonical: str, string_to_sign: str) -> Rejection:
    """API Gateway's answer to a wrong signature: the standard message, then the canonical
    request and string to sign it expected (as execute-api does, to help debug signers)."""
    return Rejection(
        BAD_SIGNATURE.error_type,
        f"{BAD_SIGNATURE.message}\n\nThe Canonical String for this request should have been\n"
        f"'{canonical}'\n\nThe String-to-Sign should have been\n'{string_to_sign}'\n",
    )


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
