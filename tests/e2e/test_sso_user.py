"""An IAM Identity Center (SSO) user through the real SigV4 gateway: carol signs with the
temporary credentials of a session of the permission set's role, is known by her login, uses
the API and the CLI like an IAM user, never sees anyone else's reservations, and is refused
without her own session token."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.credentials import Credentials

from localcloud.aws import SSO_ROLE_NAME, SSO_ROLE_PATH, SSO_SESSION_SECONDS
from localcloud.stack import LocalCloud
from tests.e2e.jobs import count_reservations, drain_jobs, reserve
from tests.support.api import ApiClient

CAROL = "carol@example.com"
CAROL_ARN = f"arn:aws:sts::123456789012:assumed-role/{SSO_ROLE_NAME}/{CAROL}"


def _kinds(cloud: LocalCloud) -> list[tuple[str, str]]:
    return [(j.kind, str(j.reservation_id)) for j in drain_jobs(cloud)]


def test_carol_has_temporary_credentials_of_an_sso_permission_set_role(
    api: ApiClient, local_cloud: LocalCloud
):
    profile = api.profiles["carol"]
    assert profile["aws_access_key_id"].startswith("ASIA")
    assert profile["aws_session_token"] and profile["region"] == "us-east-2"
    assert "carol" in local_cloud.describe()["profiles"]
    role = local_cloud.aws.client("iam").get_role(RoleName=SSO_ROLE_NAME)["Role"]  # type: ignore[union-attr]
    assert role["Path"] == "/aws-reserved/sso.amazonaws.com/" == SSO_ROLE_PATH
    assert role["MaxSessionDuration"] == SSO_SESSION_SECONDS
    trust = role["AssumeRolePolicyDocument"]
    statement = (json.loads(trust) if isinstance(trust, str) else trust)["Statement"][0]
    assert statement["Action"] == ["sts:AssumeRoleWithSAML", "sts:TagSession"]
    assert ":saml-provider/AWSSSO_" in statement["Principal"]["Federated"]
    assert SSO_ROLE_NAME.startswith("AWSReservedSSO_GpuDevUsers_")
    assert len(SSO_ROLE_NAME.rsplit("_", 1)[1]) == 16


def test_carol_is_known_by_her_login_and_her_assumed_role_session(api: ApiClient):
    reply = api.call("GET", "/v1/me", profile="carol")
    assert reply.status == 200, reply.body
    assert reply.body["username"] == CAROL
    assert reply.body["principal_arn"] == CAROL_ARN
    assert reply.body["account_id"] == "123456789012"


def test_carol_reserves_lists_shows_extends_and_cancels(api: ApiClient, local_cloud: LocalCloud):
    drain_jobs(local_cloud)
    created = reserve(api, profile="carol", gpu_type="t4", gpu_count=2, hours=2, name="sso")
    assert created.status == 202, created.body
    rid = created.body["reservation_id"]
    assert (created.body["user_id"], created.body["status"]) == (CAROL, "pending")
    assert _kinds(local_cloud) == [("create_reservation", rid)]

    listed = api.call("GET", "/v1/reservations?limit=500", profile="carol").body["reservations"]
    assert rid in [r["reservation_id"] for r in listed]
    assert all(r["user_id"] == CAROL for r in listed)
    shown = api.call("GET", f"/v1/reservations/{rid[:8]}", profile="carol")
    assert (shown.status, shown.body["reservation_id"], shown.body["name"]) == (200, rid, "sso")

    extended = api.call(
        "POST", f"/v1/reservations/{rid}/extend", profile="carol", body={"hours": 1}
    )
    assert extended.status == 202, extended.body
    assert extended.body["duration_hours"] == 3
    assert _kinds(local_cloud) == [("reservation_changed", rid)]

    cancelled = api.call("POST", f"/v1/reservations/{rid}/cancel", profile="carol")
    assert cancelled.status == 202, cancelled.body
    assert cancelled.body["cancel_requested_at"] is not None
    assert _kinds(local_cloud) == [("cancel_reservation", rid)]


def test_carol_and_alice_never_see_each_others_reservations(
    api: ApiClient, local_cloud: LocalCloud
):
    carols = reserve(api, profile="carol").body["reservation_id"]
    alices = reserve(api, profile="alice").body["reservation_id"]
    drain_jobs(local_cloud)
    for profile, other in (("carol", alices), ("alice", carols)):
        assert api.call("GET", f"/v1/reservations/{other}", profile=profile).status == 404
        mine = api.call("GET", "/v1/reservations?limit=500", profile=profile).body
        assert other not in [r["reservation_id"] for r in mine["reservations"]]
        extend = api.call(
            "POST", f"/v1/reservations/{other}/extend", profile=profile, body={"hours": 1}
        )
        cancel = api.call("POST", f"/v1/reservations/{other}/cancel", profile=profile)
        assert (extend.status, cancel.status) == (404, 404)
    assert drain_jobs(local_cloud) == []
    assert api.call("GET", f"/v1/reservations/{carols}", profile="carol").body["status"] == (
        "pending"
    )


def test_the_cli_works_as_carol_through_her_profile(run: Any):
    reserved = run(
        "--output", "json", "reserve", "-t", "t4", "-g", "1", "-h", "1", "--no-wait",
        profile="carol",
    )  # fmt: skip
    assert reserved.exit_code == 0, reserved.output
    reservation = json.loads(reserved.stdout)
    rid = reservation["reservation_id"]
    assert (reservation["user_id"], reservation["status"]) == (CAROL, "pending")

    listed = run("--output", "json", "list", profile="carol")
    assert listed.exit_code == 0, listed.output
    assert rid in [r["reservation_id"] for r in json.loads(listed.stdout)]
    cancelled = run("--output", "json", "cancel", rid[:8], profile="carol")
    assert cancelled.exit_code == 0, cancelled.output
    assert json.loads(cancelled.stdout)["cancel_requested_at"] is not None

    alices = json.loads(run("--output", "json", "list", profile="alice").stdout)
    assert rid not in [r["reservation_id"] for r in alices]
    assert run("show", rid, profile="alice").exit_code == 1


def _without_token(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() != "x-amz-security-token"}


def _tampered_token(headers: dict[str, str]) -> dict[str, str]:
    token = headers["X-Amz-Security-Token"]
    return _without_token(headers) | {"X-Amz-Security-Token": token[:-4] + "AAAA"}


@pytest.mark.parametrize(
    "how",
    ["missing", "tampered after signing", "signed with a wrong token", "another session's"],
)
def test_carols_key_without_her_own_session_token_is_refused_and_writes_nothing(
    api: ApiClient, local_cloud: LocalCloud, how: str
):
    body = json.dumps(
        {"gpu_type": "t4", "gpu_count": 1, "hours": 1, "github_user": "alice"}
    ).encode()
    carol = api.credentials("carol")
    path = "/v1/reservations"
    if how == "signed with a wrong token":
        headers = api.signed_headers(
            "POST", path, body, Credentials(carol.access_key, carol.secret_key, "bm90LWhlcg==")
        )
    elif how == "another session's":
        other = local_cloud.aws.client("sts").assume_role(  # type: ignore[union-attr]
            RoleArn=f"arn:aws:iam::123456789012:role{SSO_ROLE_PATH}{SSO_ROLE_NAME}",
            RoleSessionName="dave@example.com",
        )["Credentials"]["SessionToken"]
        headers = api.signed_headers(
            "POST", path, body, Credentials(carol.access_key, carol.secret_key, other)
        )
    else:
        signed = api.signed_headers("POST", path, body, carol)
        headers = _without_token(signed) if how == "missing" else _tampered_token(signed)
    drain_jobs(local_cloud)
    before = (count_reservations(local_cloud), local_cloud.lambdas.invocations["Api"])

    reply = api.send("POST", path, headers, body)

    assert reply.status == 403
    assert reply.headers["x-amzn-ErrorType"] == "UnrecognizedClientException"
    assert reply.body == {"message": "The security token included in the request is invalid."}
    assert (count_reservations(local_cloud), local_cloud.lambdas.invocations["Api"]) == before
    assert drain_jobs(local_cloud) == []


def test_an_iam_users_key_with_a_session_token_is_refused(api: ApiClient):
    alice = api.credentials("alice")
    token = api.credentials("carol").token
    headers = api.signed_headers(
        "GET", "/v1/me", None, Credentials(alice.access_key, alice.secret_key, token)
    )
    reply = api.send("GET", "/v1/me", headers)
    assert reply.status == 403
    assert reply.headers["x-amzn-ErrorType"] == "UnrecognizedClientException"
