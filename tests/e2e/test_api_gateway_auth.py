"""The local API Gateway enforces AWS_IAM auth like API Gateway: only valid SigV4
signatures of known keys reach the API function, with the caller's identity."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from botocore.credentials import Credentials

from localcloud.stack import LocalCloud
from tests.e2e.jobs import count_reservations
from tests.support.api import ApiClient


def _users(cloud: LocalCloud) -> list[str]:
    with psycopg.connect(cloud.database_url) as conn:
        return [row[0] for row in conn.execute("SELECT username FROM users ORDER BY 1")]


def test_health_needs_no_signature(api: ApiClient):
    reply = api.call("GET", "/health", profile=None)
    assert (reply.status, reply.body) == (200, {"status": "ok"})


@pytest.mark.parametrize("profile", ["alice", "bob"])
def test_a_signed_request_reaches_the_api_as_its_caller(api: ApiClient, profile: str):
    reply = api.call("GET", "/v1/me", profile=profile)
    assert reply.status == 200
    assert reply.body["username"] == profile
    assert reply.body["principal_arn"] == f"arn:aws:iam::123456789012:user/{profile}"


def test_first_call_creates_the_user_row(api: ApiClient, local_cloud: LocalCloud):
    api.call("GET", "/v1/me", profile="bob")
    assert "bob" in _users(local_cloud)


def test_an_unsigned_request_is_refused_like_api_gateway(api: ApiClient, local_cloud: LocalCloud):
    before = local_cloud.lambdas.invocations["Api"]
    reply = api.call("GET", "/v1/me", profile=None)
    assert local_cloud.lambdas.invocations["Api"] == before
    assert reply.status == 403
    assert reply.body == {"message": "Missing Authentication Token"}
    assert reply.headers["x-amzn-ErrorType"] == "MissingAuthenticationTokenException"


def _tampered(api: ApiClient, **change: Any) -> int:
    body = json.dumps({"hours": 2}).encode()
    headers = api.signed_headers("POST", "/v1/me?x=1", body, api.credentials("alice"))
    method = change.get("method", "POST")
    path = change.get("path", "/v1/me?x=1")
    headers.update(change.get("headers", {}))
    return api.send(method, path, headers, change.get("body", body)).status


@pytest.mark.parametrize(
    "change",
    [
        {"body": b'{"hours": 24, "github_user": "alice"}'},
        {"path": "/v1/you?x=1"},
        {"path": "/v1/me?x=2"},
        {"method": "PUT"},
        {"headers": {"Content-Type": "text/plain"}},
    ],
    ids=["body", "path", "query", "method", "signed-header"],
)
def test_a_tampered_request_is_refused_before_the_handler(
    api: ApiClient, local_cloud: LocalCloud, change: dict[str, Any]
):
    before = local_cloud.lambdas.invocations["Api"]
    assert _tampered(api, **change) == 403
    assert local_cloud.lambdas.invocations["Api"] == before


def test_the_untampered_control_request_passes_verification(api: ApiClient):
    # POST /v1/me has no route: the function answers (not 403), so the signature held.
    assert _tampered(api) in (404, 405)


def test_wrong_secret_unknown_key_and_wrong_service_are_refused(
    api: ApiClient, local_cloud: LocalCloud
):
    before = local_cloud.lambdas.invocations["Api"]
    good = api.credentials("alice")
    wrong_secret = Credentials(good.access_key, "not-the-secret")
    unknown_key = Credentials("AKIAUNKNOWNKEY000000", good.secret_key)
    for credentials, service, message in [
        (wrong_secret, "execute-api", "signature we calculated does not match"),
        (unknown_key, "execute-api", "security token included in the request is invalid"),
        (good, "s3", "correct service"),
    ]:
        headers = api.signed_headers("GET", "/v1/me", None, credentials, service=service)
        reply = api.send("GET", "/v1/me", headers)
        assert reply.status == 403, service
        assert message in reply.body["message"]
    assert local_cloud.lambdas.invocations["Api"] == before


def test_a_signature_older_than_five_minutes_is_refused(
    api: ApiClient, local_cloud: LocalCloud, monkeypatch
):
    import botocore.auth

    class Past(datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[no-untyped-def,override]
            return datetime.now(UTC) - timedelta(minutes=6)

        @classmethod
        def utcnow(cls):  # type: ignore[no-untyped-def,override]
            return datetime.now(UTC).replace(tzinfo=None) - timedelta(minutes=6)

    monkeypatch.setattr(botocore.auth.datetime, "datetime", Past)
    headers = api.signed_headers("GET", "/v1/me", None, api.credentials("alice"))
    monkeypatch.undo()
    before = local_cloud.lambdas.invocations["Api"]
    reply = api.send("GET", "/v1/me", headers)
    assert reply.status == 403
    assert reply.body["message"].startswith("Signature expired")
    assert local_cloud.lambdas.invocations["Api"] == before


def _session(cloud: LocalCloud, role_name: str, session_name: str) -> Credentials:
    """A session of a new role of the account, named as its assumer chooses."""
    iam = cloud.aws.client("iam")  # type: ignore[union-attr]
    role = iam.create_role(RoleName=role_name, AssumeRolePolicyDocument="{}")["Role"]
    sts = cloud.aws.client("sts")  # type: ignore[union-attr]
    issued = sts.assume_role(RoleArn=role["Arn"], RoleSessionName=session_name)["Credentials"]
    return Credentials(issued["AccessKeyId"], issued["SecretAccessKey"], issued["SessionToken"])


IDENTITY_CENTER_ROLE = "AWSReservedSSO_Testers_0123456789abcdef"


def test_session_credentials_need_their_token(api: ApiClient, local_cloud: LocalCloud):
    session = _session(local_cloud, IDENTITY_CENTER_ROLE, "dana")
    headers = api.signed_headers("GET", "/v1/me", None, session)
    reply = api.send("GET", "/v1/me", headers)
    assert reply.status == 200
    assert reply.body["username"] == "dana"
    assert reply.body["principal_arn"].endswith(f":assumed-role/{IDENTITY_CENTER_ROLE}/dana")

    without_token = dict(headers)
    without_token.pop("X-Amz-Security-Token")
    assert api.send("GET", "/v1/me", without_token).status == 403


def test_a_session_that_names_itself_after_a_user_cannot_claim_the_username(
    api: ApiClient, local_cloud: LocalCloud
):
    """The squatting scenario: before erin ever signs in, someone who may assume a role of
    the account names their session `erin`. Every route refuses it, nothing is written, and
    erin's own principal claims the name afterwards (and with it her tagged disks)."""
    squatter = _session(local_cloud, "AnyRoleInTheAccount", "erin")
    submit = json.dumps({"gpu_type": "t4", "gpu_count": 1, "hours": 1}).encode()
    for method, path, body in [
        ("GET", "/v1/me", None),
        ("GET", "/v1/disks", None),
        ("POST", "/v1/reservations", submit),
    ]:
        reply = api.send(method, path, api.signed_headers(method, path, body, squatter), body)
        assert reply.status == 403, (method, path, reply.body)
        assert "choose their own session name" in reply.body["message"]
        assert "gpudev:allowedRoles" in reply.body["message"]
    assert "erin" not in _users(local_cloud)

    iam = local_cloud.aws.client("iam")  # type: ignore[union-attr]
    iam.create_user(UserName="erin")
    key = iam.create_access_key(UserName="erin")["AccessKey"]
    erin = Credentials(key["AccessKeyId"], key["SecretAccessKey"])
    reply = api.send("GET", "/v1/me", api.signed_headers("GET", "/v1/me", None, erin))
    assert (reply.status, reply.body["principal_arn"]) == (
        200,
        "arn:aws:iam::123456789012:user/erin",
    )


def test_an_encoded_path_is_verified_on_the_raw_wire_path(api: ApiClient):
    path = "/v1/disks/my%20disk"
    headers = api.signed_headers("GET", path, None, api.credentials("alice"))
    reply = api.send("GET", path, headers)  # not 403: the name is refused, not the signature
    assert reply.status == 422 and reply.body["field"] == "disk_name"


# The body is bound by its hash, never by what the request claims it to be.

RESERVATION = json.dumps(
    {"gpu_type": "t4", "gpu_count": 1, "hours": 1, "github_user": "alice"}
).encode()
TAMPERED = json.dumps(
    {"gpu_type": "t4", "gpu_count": 4, "hours": 24, "github_user": "alice"}
).encode()


def _reservation_headers(api: ApiClient, content_hash: str | None) -> dict[str, str]:
    """alice's POST /v1/reservations of RESERVATION, signed with a content hash header or,
    as botocore does by default for execute-api, without one."""
    extra = {"X-Amz-Content-SHA256": content_hash} if content_hash else None
    return api.signed_headers(
        "POST", "/v1/reservations", RESERVATION, api.credentials("alice"), extra_headers=extra
    )


def _written(cloud: LocalCloud) -> tuple[int, int]:
    return count_reservations(cloud), len(_users(cloud))


@pytest.mark.parametrize(
    "content_hash",
    [None, hashlib.sha256(RESERVATION).hexdigest()],
    ids=["botocore-default", "signed-content-hash"],
)
def test_a_tampered_body_with_a_valid_signature_is_refused_and_nothing_is_written(
    api: ApiClient, local_cloud: LocalCloud, content_hash: str | None
):
    headers = _reservation_headers(api, content_hash)
    before, invocations = _written(local_cloud), local_cloud.lambdas.invocations["Api"]
    reply = api.send("POST", "/v1/reservations", headers, TAMPERED)
    assert reply.status == 403
    assert reply.headers["x-amzn-ErrorType"] == "InvalidSignatureException"
    assert reply.body["message"].startswith(
        "The request signature we calculated does not match the signature you provided."
    )
    assert local_cloud.lambdas.invocations["Api"] == invocations
    assert _written(local_cloud) == before
    # the same signature over the body it was made for passes
    assert api.send("POST", "/v1/reservations", headers, RESERVATION).status == 202


@pytest.mark.parametrize(
    "content_hash",
    [hashlib.sha256(TAMPERED).hexdigest(), "UNSIGNED-PAYLOAD"],
    ids=["another-bodys-hash", "unsigned-payload"],
)
def test_a_signed_content_hash_that_is_not_the_bodys_is_refused(
    api: ApiClient, local_cloud: LocalCloud, content_hash: str
):
    headers = _reservation_headers(api, content_hash)
    before, invocations = _written(local_cloud), local_cloud.lambdas.invocations["Api"]
    reply = api.send("POST", "/v1/reservations", headers, RESERVATION)
    assert (reply.status, reply.headers["x-amzn-ErrorType"]) == (403, "InvalidSignatureException")
    assert local_cloud.lambdas.invocations["Api"] == invocations
    assert _written(local_cloud) == before


# Repeated query names


def test_repeated_query_names_verify_and_all_reach_the_handler(api: ApiClient):
    pending = api.call(
        "POST",
        "/v1/reservations",
        body={"gpu_type": "t4", "gpu_count": 1, "hours": 1, "github_user": "alice"},
    )
    assert pending.status == 202, pending.body
    rid = pending.body["reservation_id"]

    def listed(query: str) -> set[str]:
        reply = api.call("GET", f"/v1/reservations?{query}")
        assert reply.status == 200, reply.body
        return {r["reservation_id"] for r in reply.body["reservations"]}

    assert rid in listed("status=active&status=pending")
    assert rid in listed("status=pending&status=active&limit=500")
    assert rid not in listed("status=active&status=queued")


# Only GET /health is public


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_only_get_health_is_public(
    api: ApiClient, local_cloud: LocalCloud, method: str, signed: bool
):
    # /health is a resource of its own with only GET: API Gateway does not fall back to the
    # proxy, so any other method there is an unknown route, signed or not.
    headers = (
        api.signed_headers(method, "/health", None, api.credentials("alice")) if signed else {}
    )
    before = local_cloud.lambdas.invocations["Api"]
    reply = api.send(method, "/health", headers)
    assert (reply.status, reply.body) == (403, {"message": "Missing Authentication Token"})
    assert reply.headers["x-amzn-ErrorType"] == "MissingAuthenticationTokenException"
    assert local_cloud.lambdas.invocations["Api"] == before


def test_an_unsigned_request_to_an_unknown_path_is_missing_its_token(api: ApiClient):
    for path in ("/", "/nope", "/health/x", "/v1/reservations?status=active"):
        reply = api.call("GET", path, profile=None)
        assert (reply.status, reply.body) == (403, {"message": "Missing Authentication Token"})
