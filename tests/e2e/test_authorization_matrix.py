"""Who may call which route, through the real SigV4 gateway: for every route of the API,
the owner is allowed, another user gets 404 for the owner's reservation and disk, and a
principal that derives the owner's username (a session of another role named like the
owner, an IAM user on another path, a principal of another account) gets 403 with a clear
message and nothing is written: no row changes, no job is queued."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from botocore.credentials import Credentials

from gpudev_cli.client import Reply
from localcloud.image_builds import CONTEXT_BUCKET
from localcloud.stack import LocalCloud
from tests.e2e.jobs import drain_jobs
from tests.support.api import ApiClient
from tests.support.waiting import wait_for

OPENAPI = Path(__file__).parents[2] / "docs" / "openapi.json"
ACCOUNT = "123456789012"
OTHER_ACCOUNT = "111111111111"
BOUND_ELSEWHERE = "belongs to another principal; you called as"


def _context_tar() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        dockerfile = f"FROM ubuntu:24.04\nRUN echo {uuid.uuid4().hex}\n".encode()
        info = tarfile.TarInfo("Dockerfile.gpu-dev")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
    return out.getvalue()


# The build context the owners upload (_owned): a tar of one Dockerfile, as the CLI sends.
CONTEXT_TAR = _context_tar()
CONTEXT = hashlib.sha256(CONTEXT_TAR).hexdigest()
OTHER_ACCOUNT_MESSAGE = f"gpu-dev accepts principals of account {ACCOUNT}; you called from"


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # {rid} and {disk} are the owner's reservation and disk
    body: Any = None
    per_resource: bool = False  # names the owner's reservation or disk

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


# Every route of functions/api/handler.py but the public GET /health, in an order the owner
# can run them all (changes before the cancel, the rename before the delete, the restore
# after it).
ROUTES = (
    Route("GET", "/v1/me"),
    Route("GET", "/v1/me/notifications"),
    Route("PUT", "/v1/me/notifications", {"enabled": True}),
    Route("GET", "/v1/utilisation"),
    Route("GET", "/v1/gpu/availability"),
    Route("GET", "/v1/cluster/status"),
    Route("GET", "/v1/reservations"),
    Route(
        "POST",
        "/v1/reservations",
        {"gpu_type": "t4", "gpu_count": 1, "hours": 1, "github_user": "alice"},
    ),
    Route("GET", "/v1/reservations/{rid}", per_resource=True),
    Route("GET", "/v1/reservations/{rid}/events", per_resource=True),
    Route("GET", "/v1/reservations/{rid}/logs", per_resource=True),
    Route("GET", "/v1/reservations/{rid}/utilisation", per_resource=True),
    Route("GET", "/v1/reservations/{rid}/mounts", per_resource=True),
    Route("PUT", "/v1/reservations/{rid}/idle-timeout", {"idle_timeout": "2h"}, True),
    Route("POST", "/v1/reservations/{rid}/extend", {"hours": 1}, per_resource=True),
    Route("POST", "/v1/reservations/{rid}/users", {"github_username": "octocat"}, True),
    Route("DELETE", "/v1/reservations/{rid}/users/octocat", per_resource=True),
    Route("PUT", "/v1/reservations/{rid}/jupyter", per_resource=True),
    Route("DELETE", "/v1/reservations/{rid}/jupyter", per_resource=True),
    Route("POST", "/v1/reservations/{rid}/cancel", per_resource=True),
    # {ctx}: a build context the owner uploaded (_owned); the upload route's own hash is
    # another, so a second user asking to upload it owns theirs, not the owner's.
    Route("POST", "/v1/images/uploads", {"context_hash": "e" * 64, "size_bytes": 10}),
    Route("GET", "/v1/images"),
    Route("POST", "/v1/images/builds", {"context_hash": "{ctx}"}, per_resource=True),
    Route("GET", "/v1/images/builds/{ctx}", per_resource=True),
    Route("GET", "/v1/disks"),
    Route("GET", "/v1/shares"),
    Route("POST", "/v1/disks", {"disk_name": "matrix-new"}),
    Route("GET", "/v1/disks/{disk}", per_resource=True),
    Route("GET", "/v1/disks/{disk}/content", per_resource=True),
    Route("POST", "/v1/disks/{disk}/clone", {"new_name": "{disk}-c"}, per_resource=True),
    Route("POST", "/v1/disks/{disk}/rename", {"new_name": "{disk}-2"}, per_resource=True),
    Route("DELETE", "/v1/disks/{disk}-2", per_resource=True),
    Route("POST", "/v1/disks/{disk}-2/restore", per_resource=True),
    Route("GET", "/v1/usage"),
)

# The operator routes: sessions of ADMIN_ROLES only; everyone else gets 403, nothing written.
ADMIN_ROUTES = (
    Route("GET", "/v1/admin/usage"),
    Route("GET", "/v1/admin/reservations"),
    Route("GET", "/v1/admin/dlq"),
    Route("GET", "/v1/admin/reservations/{rid}/events", per_resource=True),
    Route("GET", "/v1/admin/reservations/{rid}/logs", per_resource=True),
    Route("POST", "/v1/admin/reservations/{rid}/cancel", {"reason": "matrix"}, True),
)
OPERATORS_ONLY = "this is an operator route: it needs a session of an admin role"


def test_the_matrix_covers_every_route_of_the_api():
    paths = json.loads(OPENAPI.read_text())["paths"]
    documented = {
        f"{method.upper()} {path}"
        for path, methods in paths.items()
        for method in methods
        if path != "/health"
    }
    covered = {
        f"{r.method} {r.path.replace('{rid}', '{reservation_id}')}".replace(
            "{disk}-2", "{disk_name}"
        )
        .replace("{disk}", "{disk_name}")
        .replace("{ctx}", "{context_hash}")
        .replace("/users/octocat", "/users/{github_username}")
        for r in ROUTES + ADMIN_ROUTES
    }
    assert covered == documented


def _fill(value: Any, disk: str) -> Any:
    return value.replace("{disk}", disk) if isinstance(value, str) else value


class Signer:
    def __init__(self, api: ApiClient):
        self.api = api

    def call(self, who: Credentials, route: Route, rid: str, disk: str) -> Reply:
        path = route.path.replace("{rid}", rid).replace("{disk}", disk).replace("{ctx}", CONTEXT)
        body = route.body
        if isinstance(body, dict):
            body = {
                k: v.replace("{disk}", disk).replace("{ctx}", CONTEXT) if isinstance(v, str) else v
                for k, v in body.items()
            }
        data = json.dumps(body).encode() if body is not None else None
        headers = self.api.signed_headers(route.method, path, data, who)
        return self.api.send(route.method, path, headers, data)


def _session(cloud: LocalCloud, role_arn: str, session_name: str) -> Credentials:
    issued = cloud.aws.client("sts").assume_role(  # type: ignore[union-attr]
        RoleArn=role_arn, RoleSessionName=session_name
    )["Credentials"]
    return Credentials(issued["AccessKeyId"], issued["SecretAccessKey"], issued["SessionToken"])


HASH = "0123456789abcdef"  # Identity Center's 16 hex digits after a permission set's name


def _iam_user(cloud: LocalCloud, name: str, path: str) -> Credentials:
    iam = cloud.aws.client("iam")  # type: ignore[union-attr]
    iam.create_user(UserName=name, Path=path)
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return Credentials(key["AccessKeyId"], key["SecretAccessKey"])


def _role(cloud: LocalCloud, name: str, path: str = "/") -> str:
    iam = cloud.aws.client("iam")  # type: ignore[union-attr]
    return iam.create_role(RoleName=name, Path=path, AssumeRolePolicyDocument="{}")["Role"]["Arn"]


@pytest.fixture(scope="module")
def principals(local_cloud: LocalCloud, api: ApiClient) -> Iterator[dict[str, Credentials]]:
    """Owners (the IAM user alice; erin, a session of a role) and the principals that
    derive their usernames, made in moto and signing with their own keys."""
    # Identity Center permission sets' roles: the only roles whose sessions the local cloud
    # (no allowed roles) admits, as their session names are set by Identity Center.
    matrix_role = _role(local_cloud, f"AWSReservedSSO_Matrix{uuid.uuid4().hex[:6]}_{HASH}")
    other_role = _role(local_cloud, f"AWSReservedSSO_Other{uuid.uuid4().hex[:6]}_{HASH}")
    erin = f"erin{uuid.uuid4().hex[:6]}"
    yield {
        "alice": api.credentials("alice"),
        "bob": api.credentials("bob"),
        "erin": _session(local_cloud, matrix_role, erin),
        # (a) a session of another role whose session name is alice
        "alice-as-session": _session(local_cloud, other_role, "alice"),
        # (b) an IAM user on another path named like erin (IAM user names are unique per
        # account, so the collision is with a username bound to a role session)
        "erin-as-contractor": _iam_user(local_cloud, erin, "/contractors/"),
        # (c) a principal of another account (moto: AssumeRole into its role ARN)
        "alice-elsewhere": _session(
            local_cloud, f"arn:aws:iam::{OTHER_ACCOUNT}:role/Elsewhere", "alice"
        ),
    }


def _owned(
    cloud: LocalCloud, api: ApiClient, signer: Signer, who: Credentials
) -> tuple[str, str, str]:
    disk = f"matrix-{uuid.uuid4().hex[:8]}"
    me = signer.call(who, Route("GET", "/v1/me"), "", "")
    assert me.status == 200, me.body
    made = signer.call(who, Route("POST", "/v1/disks", {"disk_name": disk}), "", "")
    assert made.status == 202, made.body
    # A completed snapshot, as the lifecycle records one at a reservation's end: the disk
    # may be cloned.
    with psycopg.connect(cloud.database_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE disks SET last_snapshot_at = now(), snapshot_count = 1 WHERE disk_name = %s",
            (disk,),
        )
    upload = Route("POST", "/v1/images/uploads", {"context_hash": CONTEXT, "size_bytes": 10})
    assert signer.call(who, upload, "", "").status == 200
    cloud.aws.client("s3").put_object(  # type: ignore[union-attr]
        Bucket=CONTEXT_BUCKET, Key=f"contexts/{CONTEXT}.tar", Body=CONTEXT_TAR
    )
    body = {"gpu_type": "t4", "gpu_count": 1, "hours": 1, "github_user": "alice"}
    reserved = signer.call(who, Route("POST", "/v1/reservations", body), "", "")
    assert reserved.status == 202, reserved.body
    rid = reserved.body["reservation_id"]
    # The allocator places a waiting row, pending ones too, at its next pass (allocation.md):
    # placed before a test records the rows, so its write is not taken for a request's.
    wait_for(lambda: _placed(cloud, rid), 10, "the allocator placed the reservation")
    return me.body["username"], rid, disk


def _placed(cloud: LocalCloud, rid: str) -> bool:
    with psycopg.connect(cloud.database_url) as conn:
        row = conn.execute(
            "SELECT queue_position IS NOT NULL OR granted_at IS NOT NULL FROM reservations"
            " WHERE reservation_id = %s",
            (rid,),
        ).fetchone()
    return bool(row and row[0])


# What the allocator rewrites on a waiting row at any pass (its place and estimated start,
# pending rows too): not the API's writes, so not compared.
ALLOCATOR_COLUMNS = {
    "queue_position",
    "estimated_start_at",
    "updated_at",
    "current_detailed_status",
}


def _state(cloud: LocalCloud, username: str) -> list[Any]:
    """Every row the API could write for `username`: users and disks with their row version,
    reservations with every column the API writes."""
    with psycopg.connect(cloud.database_url) as conn:
        users = conn.execute(
            "SELECT xmin::text, * FROM users WHERE username = %s", (username,)
        ).fetchall()
        disks = conn.execute(
            "SELECT xmin::text, * FROM disks WHERE user_id = %s ORDER BY 2", (username,)
        ).fetchall()
        cursor = conn.execute(
            "SELECT * FROM reservations WHERE user_id = %s ORDER BY reservation_id", (username,)
        )
        names = [column.name for column in cursor.description or ()]
        reservations = [
            {n: v for n, v in zip(names, row, strict=True) if n not in ALLOCATOR_COLUMNS}
            for row in cursor.fetchall()
        ]
    return [users, reservations, disks]


@pytest.fixture(scope="module")
def signer(api: ApiClient) -> Signer:
    return Signer(api)


@pytest.mark.parametrize(
    ("owner", "impostor", "message"),
    [
        ("alice", "alice-as-session", BOUND_ELSEWHERE),
        ("erin", "erin-as-contractor", BOUND_ELSEWHERE),
        ("alice", "alice-elsewhere", OTHER_ACCOUNT_MESSAGE),
    ],
    ids=["assumed-role-named-alice", "iam-user-on-another-path", "another-account"],
)
def test_every_route_refuses_a_principal_deriving_the_owners_username_writing_nothing(
    local_cloud: LocalCloud,
    api: ApiClient,
    signer: Signer,
    principals: dict[str, Credentials],
    owner: str,
    impostor: str,
    message: str,
):
    username, rid, disk = _owned(local_cloud, api, signer, principals[owner])
    drain_jobs(local_cloud)
    before = _state(local_cloud, username)
    for route in ROUTES:
        reply = signer.call(principals[impostor], route, rid, disk)
        assert reply.status == 403, (str(route), reply.body)
        assert message in reply.body["message"], (str(route), reply.body)
        if message == BOUND_ELSEWHERE:
            assert reply.body["message"].startswith(f"the username {username} belongs")
    assert _state(local_cloud, username) == before
    assert drain_jobs(local_cloud) == []


def test_another_user_never_finds_the_owners_reservation_or_disk(
    local_cloud: LocalCloud, api: ApiClient, signer: Signer, principals: dict[str, Credentials]
):
    username, rid, disk = _owned(local_cloud, api, signer, principals["alice"])
    drain_jobs(local_cloud)
    before = _state(local_cloud, username)
    for route in ROUTES:
        reply = signer.call(principals["bob"], route, rid, disk)
        if route.per_resource:
            assert reply.status == 404, (str(route), reply.body)
        else:
            assert reply.status in (200, 202), (str(route), reply.body)
            assert rid not in json.dumps(reply.body) and disk not in json.dumps(reply.body)
    assert _state(local_cloud, username) == before
    drain_jobs(local_cloud)


@pytest.mark.parametrize("owner", ["alice", "erin"])
def test_the_owner_may_call_every_route(
    local_cloud: LocalCloud,
    api: ApiClient,
    signer: Signer,
    principals: dict[str, Credentials],
    owner: str,
):
    _, rid, disk = _owned(local_cloud, api, signer, principals[owner])
    for route in ROUTES:
        if route.path == "/v1/disks" and route.method == "POST":
            route = Route("POST", "/v1/disks", {"disk_name": f"{disk}-new"})
        reply = signer.call(principals[owner], route, rid, disk)
        assert reply.status in (200, 202), (str(route), reply.body)
    drain_jobs(local_cloud)


def test_allowed_roles_match_identity_center_roles_by_path_and_prefix(
    local_cloud: LocalCloud, api: ApiClient, signer: Signer, monkeypatch: pytest.MonkeyPatch
):
    from gpudev.settings import reset_settings_cache

    sso_path = "/aws-reserved/sso.amazonaws.com/"
    suffix = uuid.uuid4().hex[:16]
    users = _role(local_cloud, f"AWSReservedSSO_GpuDevUsers_{suffix}", sso_path)
    admins = _role(local_cloud, f"AWSReservedSSO_GpuDevAdmins_{suffix}", sso_path)
    frank = f"frank{suffix[:6]}@example.com"
    allowed = _session(local_cloud, users, frank)
    refused = _session(local_cloud, admins, f"gina{suffix[:6]}@example.com")
    me = Route("GET", "/v1/me")
    monkeypatch.setenv(
        "ALLOWED_ROLES", "aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevUsers_*"
    )
    reset_settings_cache()
    try:
        reply = signer.call(allowed, me, "", "")
        assert (reply.status, reply.body["username"]) == (200, frank)
        assert reply.body["principal_arn"] == (
            f"arn:aws:sts::{ACCOUNT}:assumed-role/AWSReservedSSO_GpuDevUsers_{suffix}/{frank}"
        )
        before = _state(local_cloud, f"gina{suffix[:6]}@example.com")
        for who in (refused, api.credentials("bob")):
            reply = signer.call(who, me, "", "")
            assert reply.status == 403
            assert reply.body["message"].startswith(
                "gpu-dev accepts sessions of the roles "
                "aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevUsers_*; you called as"
            )
        assert _state(local_cloud, f"gina{suffix[:6]}@example.com") == before == [[], [], []]
    finally:
        monkeypatch.undo()
        reset_settings_cache()


def test_operator_routes_refuse_everyone_but_sessions_of_the_admin_roles(
    local_cloud: LocalCloud,
    api: ApiClient,
    signer: Signer,
    principals: dict[str, Credentials],
    monkeypatch: pytest.MonkeyPatch,
):
    from gpudev.settings import reset_settings_cache

    suffix = uuid.uuid4().hex[:8]
    admins = _role(local_cloud, f"AWSReservedSSO_GpuDevAdmins{suffix}_{HASH}")
    operator = _session(local_cloud, admins, f"olga{suffix}")
    username, rid, disk = _owned(local_cloud, api, signer, principals["alice"])
    drain_jobs(local_cloud)
    monkeypatch.setenv(
        "ADMIN_ROLES", f"arn:aws:iam::{ACCOUNT}:role/AWSReservedSSO_GpuDevAdmins{suffix}_{HASH}"
    )
    reset_settings_cache()
    try:
        before = _state(local_cloud, username)
        # the owner, another user, a session of another role, principals deriving a username
        for who in ("alice", "bob", "erin", "alice-as-session", "erin-as-contractor"):
            for route in ADMIN_ROUTES:
                reply = signer.call(principals[who], route, rid, disk)
                assert reply.status == 403, (who, str(route), reply.body)
                assert reply.body["message"].startswith(OPERATORS_ONLY), (who, reply.body)
        for route in ADMIN_ROUTES:  # another account is refused before the role is looked at
            reply = signer.call(principals["alice-elsewhere"], route, rid, disk)
            assert reply.status == 403 and OTHER_ACCOUNT_MESSAGE in reply.body["message"]
        assert _state(local_cloud, username) == before
        assert drain_jobs(local_cloud) == []

        for route in ADMIN_ROUTES:
            reply = signer.call(operator, route, rid, disk)
            assert reply.status in (200, 202), (str(route), reply.body)
        # alice's timeline, read by the operator: the owner's answer, entry for entry
        timeline = signer.call(operator, ADMIN_ROUTES[3], rid, disk).body
        owners = signer.call(
            principals["alice"],
            Route("GET", "/v1/reservations/{rid}/events", per_resource=True),
            rid,
            disk,
        ).body
        assert (
            timeline["events"] and timeline["events"] == owners["events"][: len(timeline["events"])]
        )
        live = signer.call(operator, ADMIN_ROUTES[1], rid, disk).body["reservations"]
        assert isinstance(signer.call(operator, ADMIN_ROUTES[2], rid, disk).body["depth"], int)
        assert rid in {r["reservation_id"] for r in live}  # alice's, listed for the operator
        with psycopg.connect(local_cloud.database_url) as conn:
            assert conn.execute(
                "SELECT cancel_reason FROM reservations WHERE reservation_id = %s", (rid,)
            ).fetchone() == (f"cancelled by operator olga{suffix}: matrix",)
    finally:
        monkeypatch.undo()
        reset_settings_cache()
    drain_jobs(local_cloud)


def test_the_local_gateway_gives_handlers_api_gateways_iam_identity_fields():
    from localcloud.gateway import proxy_event
    from localcloud.sigv4 import SigningKey

    key = SigningKey(
        "ASIAEXAMPLE", "secret", f"arn:aws:sts::{ACCOUNT}:assumed-role/R/dana", ACCOUNT, "AROA:dana"
    )
    identity = proxy_event("GET", "/v1/me", {"User-Agent": "gpu-dev"}, b"", key, "10.0.0.1")[
        "requestContext"
    ]["identity"]
    assert {field for field, value in identity.items() if value is None} == {
        # No Cognito, API keys, mutual TLS or AWS Organizations locally.
        *("cognitoIdentityId", "cognitoIdentityPoolId"),
        *("cognitoAuthenticationType", "cognitoAuthenticationProvider"),
        *("apiKey", "apiKeyId", "principalOrgId", "clientCert"),
    }
    assert {field: value for field, value in identity.items() if value is not None} == {
        "accountId": ACCOUNT,
        "caller": "AROA:dana",
        "user": "AROA:dana",
        "userArn": f"arn:aws:sts::{ACCOUNT}:assumed-role/R/dana",
        "accessKey": "ASIAEXAMPLE",
        "sourceIp": "10.0.0.1",
        "userAgent": "gpu-dev",
    }
