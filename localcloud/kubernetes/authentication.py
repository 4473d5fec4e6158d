"""Who is calling: EKS bearer tokens verified as EKS verifies them (aws-iam-authenticator's
`pkg/token/token.go`), then mapped to a Kubernetes user by the cluster's access entries.

A token is `k8s-aws-v1.` + the base64url of a presigned STS GetCallerIdentity URL. EKS
checks its shape (at most 4 KiB; https; an STS host; path `/`; only the SigV4 query
parameters, each once; `Action=GetCallerIdentity`; `x-k8s-aws-id` among the signed headers;
`X-Amz-Expires` between 0 and 900; an `X-Amz-Date`), refuses it 15 minutes after its
`X-Amz-Date`, and then sends the URL to STS with `x-k8s-aws-id` set to *its own* cluster's
name: STS recomputes the signature with the access key's secret, so a token signed for
another cluster, with a changed or zeroed signature, from an unknown key, or with a
credential scoped to another region than the endpoint's (`sts.amazonaws.com` is us-east-1)
fails there.
The stand-in does STS's part itself with the local IAM/STS keys (`localcloud/sigv4.py`
builds the canonical request), and refuses a date more than SigV4's 5 minutes ahead of now.

Any failure is 401 Unauthorized, as is a principal no access entry maps (EKS answers 401
then, not 403). Assumed-role ARNs are normalised to their role's ARN first, as EKS does.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from localcloud.kubernetes.access_entries import AccessEntries, UserInfo
from localcloud.kubernetes.errors import ApiError
from localcloud.sigv4 import MAX_SKEW, SigningKey, canonical_request

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
MAX_TOKEN_BYTES = 4 * 1024
TOKEN_LIFETIME = timedelta(minutes=15)  # after X-Amz-Date, whatever X-Amz-Expires says
MAX_EXPIRES_SECONDS = 900
ALLOWED_PARAMETERS = frozenset(
    {
        "action",
        "version",
        "x-amz-algorithm",
        "x-amz-credential",
        "x-amz-date",
        "x-amz-expires",
        "x-amz-security-token",
        "x-amz-signature",
        "x-amz-signedheaders",
    }
)
GLOBAL_STS_REGION = "us-east-1"  # sts.amazonaws.com signs and verifies as us-east-1
_STS_HOST = re.compile(r"^sts(?:\.(?P<region>[a-z]{2}(?:-[a-z]+)+-\d))?\.amazonaws\.com$")
# botocore presigns STS with the empty body's hash, as the Go SDK does.
_EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


class InvalidToken(Exception):
    """Why a token is refused (logged; the caller only ever sees 401 Unauthorized)."""


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def verify_token(
    token: str,
    cluster_name: str,
    lookup_key: Callable[[str], SigningKey | None],
    now: datetime | None = None,
) -> SigningKey:
    """The key that presigned `token` for `cluster_name`, or InvalidToken saying why not."""
    if len(token) > MAX_TOKEN_BYTES:
        raise InvalidToken("token is too large")
    if not token.startswith(TOKEN_PREFIX):
        raise InvalidToken(f"token is missing expected {TOKEN_PREFIX!r} prefix")
    encoded = token.removeprefix(TOKEN_PREFIX)
    try:
        padded = encoded + "=" * (-len(encoded) % 4)  # Go's RawURLEncoding: strict, unpadded
        url = base64.b64decode(padded, altchars=b"-_", validate=True).decode()
    except (binascii.Error, ValueError):
        raise InvalidToken("token is not base64url") from None
    split = urlsplit(url)
    if split.scheme != "https":
        raise InvalidToken(f"unexpected scheme {split.scheme!r} in pre-signed URL")
    host = _STS_HOST.match(split.netloc)
    if host is None:
        raise InvalidToken(f"unexpected hostname {split.netloc!r} in pre-signed URL")
    if split.path != "/":
        raise InvalidToken("unexpected path in pre-signed URL")
    query: dict[str, str] = {}
    for key, value in parse_qsl(split.query, keep_blank_values=True):
        if key.lower() not in ALLOWED_PARAMETERS:
            raise InvalidToken(f"non-whitelisted query parameter {key!r}")
        if key.lower() in query:
            raise InvalidToken(f"duplicate query parameter found: {key!r}")
        query[key.lower()] = value
    if query.get("action") != "GetCallerIdentity":
        raise InvalidToken("unexpected action parameter in pre-signed URL")
    signed_headers = query.get("x-amz-signedheaders", "").lower().split(";")
    if CLUSTER_ID_HEADER not in signed_headers:
        raise InvalidToken(f"client did not sign the {CLUSTER_ID_HEADER} header")
    try:
        expires = int(query.get("x-amz-expires", ""))
    except ValueError:
        expires = -1
    if not 0 <= expires <= MAX_EXPIRES_SECONDS:
        raise InvalidToken("invalid X-Amz-Expires parameter in pre-signed URL")
    try:
        signed_at = datetime.strptime(query.get("x-amz-date", ""), "%Y%m%dT%H%M%SZ")
    except ValueError:
        raise InvalidToken("X-Amz-Date parameter missing or malformed") from None
    signed_at = signed_at.replace(tzinfo=UTC)
    now = now or datetime.now(UTC)
    if now > signed_at + TOKEN_LIFETIME:
        raise InvalidToken(f"X-Amz-Date parameter is expired (15 minute expiration) {signed_at}")
    if signed_at > now + MAX_SKEW:
        raise InvalidToken(f"X-Amz-Date {signed_at} is in the future")
    region = host["region"] or GLOBAL_STS_REGION
    return _verify_with_sts(split.netloc, region, split.query, query, cluster_name, lookup_key, now)


def _verify_with_sts(
    host: str,
    region: str,
    raw_query: str,
    query: dict[str, str],
    cluster_name: str,
    lookup_key: Callable[[str], SigningKey | None],
    now: datetime,
) -> SigningKey:
    """STS's part: the signature over the URL with `x-k8s-aws-id` set to our cluster's name,
    recomputed with the key's secret; the session token and expiry of temporary keys. The
    credential scope's region must be the endpoint's (`region`): STS refuses a signature
    scoped to another region."""
    scope = query.get("x-amz-credential", "").split("/")
    if len(scope) != 5 or scope[3] != "sts" or scope[4] != "aws4_request":
        raise InvalidToken("credential is not scoped to sts")
    if scope[2] != region:
        raise InvalidToken(f"credential is scoped to {scope[2]!r}, the endpoint is {region!r}")
    if scope[1] != query["x-amz-date"][:8]:
        raise InvalidToken("credential date does not match X-Amz-Date")
    key = lookup_key(scope[0])
    if key is None:
        raise InvalidToken("the access key is unknown")
    if key.session_token is None:
        if "x-amz-security-token" in query:
            raise InvalidToken("a long-term key with a session token")
    elif not hmac.compare_digest(
        query.get("x-amz-security-token", "").encode(), key.session_token.encode()
    ):
        raise InvalidToken("the session token is not the key's")
    elif key.expires_at is not None and now >= key.expires_at:
        raise InvalidToken("the session has expired")
    signed_headers = query["x-amz-signedheaders"].lower().split(";")
    unsigned_query = "&".join(
        pair for pair in raw_query.split("&") if pair.split("=", 1)[0] != "X-Amz-Signature"
    )
    headers = {"host": host, CLUSTER_ID_HEADER: cluster_name}
    canonical = canonical_request(
        "GET", f"/?{unsigned_query}", headers, signed_headers, _EMPTY_SHA256
    )
    request = AWSRequest(method="GET", url=f"https://{host}/")
    request.context["timestamp"] = query["x-amz-date"]
    signer = SigV4Auth(
        Credentials(key.access_key_id, key.secret_access_key, key.session_token),
        "sts",
        scope[2],
    )
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected, query.get("x-amz-signature", "")):
        raise InvalidToken("the signature does not match (another cluster, or altered)")
    return key


def bearer_token(authorization: str | None) -> str:
    if not authorization or not authorization.startswith("Bearer "):
        raise InvalidToken("no bearer token")
    return authorization.removeprefix("Bearer ").strip()


class Authenticator:
    """Bearer token -> Kubernetes user, as EKS: verified token, canonical principal ARN,
    access entry (401 Unauthorized for any failure)."""

    def __init__(
        self,
        cluster_name: str,
        lookup_key: Callable[[str], SigningKey | None],
        access_entries: AccessEntries,
        on_refusal: Callable[[str], None] = lambda reason: None,
    ):
        self.cluster_name = cluster_name
        self._lookup_key = lookup_key
        self.access_entries = access_entries
        self._on_refusal = on_refusal

    def authenticate(self, authorization: str | None) -> UserInfo:
        try:
            key = verify_token(bearer_token(authorization), self.cluster_name, self._lookup_key)
        except InvalidToken as refused:
            self._on_refusal(str(refused))
            raise unauthorized() from None
        user = self.access_entries.user(key.principal_arn, key.user_id)
        if user is None:
            self._on_refusal(f"no access entry maps {key.principal_arn}")
            raise unauthorized()
        return user
