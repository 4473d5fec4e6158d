"""POST/GET /v1/reservations through the SigV4 gateway: validation at submit time with
actionable messages and nothing written, idempotent create, one job per reservation, and
users never seeing each other's reservations."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.e2e.jobs import count_reservations, drain_jobs, reserve
from tests.support.databases import fetch_value, mark_ended
from tests.support.waiting import wait_for

SWEEPER_EVENT = json.loads(
    (Path(__file__).resolve().parents[2] / "events" / "sweeper" / "scheduled.json").read_text()
)


def test_a_valid_request_is_accepted_pending_and_enqueued_once(api, local_cloud):
    drain_jobs(local_cloud)
    reply = reserve(api, gpu_type="H100", hours=0.5, name="train", jupyter=True)
    assert reply.status == 202, reply.body
    body = reply.body
    assert (
        body["status"],
        body["gpu_type"],
        body["gpu_count"],
        body["duration_hours"],
        body["user_id"],
        body["instance_type"],
    ) == ("pending", "h100", 4, 0.5, "alice", "p5.48xlarge")
    assert "task_token" not in body and "execution_arn" not in body
    jobs = drain_jobs(local_cloud)
    assert [(j.kind, str(j.reservation_id)) for j in jobs] == [
        ("create_reservation", body["reservation_id"])
    ]


def test_a_repeated_client_request_id_returns_the_first_reservation_and_enqueues_nothing(
    api, local_cloud
):
    drain_jobs(local_cloud)
    request_id = uuid.uuid4().hex
    first = reserve(api, client_request_id=request_id)
    again = reserve(api, client_request_id=request_id, hours=9)
    assert (first.status, again.status) == (202, 200)
    assert again.body["reservation_id"] == first.body["reservation_id"]
    assert again.body["duration_hours"] == 2
    assert len(drain_jobs(local_cloud)) == 1


def test_multinode_requests_take_whole_nodes(api):
    reply = reserve(api, gpu_count=16)
    assert reply.status == 202 and reply.body["total_nodes"] == 2


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"gpu_type": "foo"}, "unknown GPU type 'foo'; valid types: a100, a10g, b200"),
        ({"gpu_type": "t4", "gpu_count": 8}, "t4 accepts 1, 2, 4 GPUs (one node has 4"),
        ({"gpu_type": "h100", "gpu_count": 40}, "h100 accepts 1, 2, 4, 8, 16, 24, 32 GPUs"),
        ({"gpu_type": "h100", "gpu_count": 3}, "cannot reserve 3 GPUs"),
        ({"gpu_type": "cpu-x86", "gpu_count": 1}, "cpu-x86 is CPU-only: ask for 0 GPUs"),
        ({"gpu_type": "t4", "gpu_count": 0}, "t4 accepts 1, 2, 4 GPUs"),
        ({"hours": 0.05}, "hours must be at least 5 minutes (0.0833 h); got 0.05"),
        ({"hours": 25}, "hours must be at most 24 hours; got 25"),
        ({"disk_name": "my disk"}, "invalid disk name 'my disk'"),
        ({"github_user": "-bad-"}, "invalid GitHub username '-bad-'"),
    ],
)
def test_invalid_requests_fail_at_submit_with_a_clear_message_and_write_nothing(
    api, local_cloud, fields, message
):
    drain_jobs(local_cloud)
    before = count_reservations(local_cloud)
    reply = reserve(api, **fields)
    assert reply.status == 422, reply.body
    assert message in reply.body["message"]
    assert count_reservations(local_cloud) == before
    assert drain_jobs(local_cloud) == []


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"gpu_type": "h100"},
        {"gpu_type": "h100", "gpu_count": "four", "hours": 1},
        {"gpu_type": "h100", "gpu_count": -1, "hours": 1},
    ],
)
def test_malformed_bodies_are_422_naming_the_field(api, body):
    reply = api.call("POST", "/v1/reservations", body=body)
    assert reply.status == 422
    assert reply.body["message"] and reply.body["field"] in ("gpu_type", "gpu_count", "hours")


def _outbox_rows(cloud: Any, reservation_id: str) -> int:
    statement = "SELECT count(*) FROM outbox WHERE payload->>'reservation_id' = %s"
    return int(fetch_value(cloud.database_url, statement, reservation_id))


def test_a_refused_enqueue_is_202_and_the_sweepers_relay_sends_the_job_later(
    api, local_cloud, monkeypatch
):
    """The reservation is committed with its job in the outbox before anything is sent: SQS
    refusing the send after the commit is not the caller's error, and the next sweeper run
    sends the job."""
    from gpudev.settings import reset_settings_cache

    drain_jobs(local_cloud)
    monkeypatch.setenv("JOBS_QUEUE_URL", local_cloud.resources.queue_urls["Jobs"] + "-missing")
    reset_settings_cache()
    try:
        before = count_reservations(local_cloud)
        reply = reserve(api)
    finally:
        monkeypatch.undo()
        reset_settings_cache()
    assert reply.status == 202, reply.body
    rid = reply.body["reservation_id"]
    assert count_reservations(local_cloud) == before + 1
    assert _outbox_rows(local_cloud, rid) == 1
    assert [j for j in drain_jobs(local_cloud) if str(j.reservation_id) == rid] == []

    monkeypatch.setenv("SWEEPER_OUTBOX_AFTER_SECONDS", "0")
    monkeypatch.setenv("SWEEPER_PENDING_AFTER_SECONDS", "1000000")  # no create re-sends here
    reset_settings_cache()

    def ran() -> Any:
        """A run that was not skipped because another run held the sweeper's lock."""
        invocation = local_cloud.lambdas.invoke("Sweeper", SWEEPER_EVENT)
        assert not invocation.errored, invocation.payload
        return invocation if invocation.payload.get("outcome") != "skipped" else None

    try:
        invocation = wait_for(ran, message="a sweeper run of its own")
    finally:
        monkeypatch.undo()
        reset_settings_cache()
    assert invocation.payload["statistics"]["jobs_relayed"] >= 1
    jobs = [j for j in drain_jobs(local_cloud) if str(j.reservation_id) == rid]
    assert [j.kind for j in jobs] == ["create_reservation"]
    assert _outbox_rows(local_cloud, rid) == 0


def test_reservations_are_found_by_id_or_prefix_and_listed_for_their_owner_only(api):
    created = reserve(api, profile="alice", name="mine").body
    rid = created["reservation_id"]
    assert api.call("GET", f"/v1/reservations/{rid}").body["name"] == "mine"
    assert api.call("GET", f"/v1/reservations/{rid[:8]}").body["reservation_id"] == rid
    short = api.call("GET", f"/v1/reservations/{rid[:5]}")
    assert short.status == 422 and "is not a reservation id" in short.body["message"]
    assert short.body["field"] == "reservation_id"
    malformed = api.call("GET", "/v1/reservations/e85-not-hex")
    assert malformed.status == 422 and "is not a reservation id" in malformed.body["message"]
    # bob cannot see alice's reservation, by id or in his list
    assert api.call("GET", f"/v1/reservations/{rid}", profile="bob").status == 404
    bobs = api.call("GET", "/v1/reservations?limit=500", profile="bob").body["reservations"]
    assert rid not in [r["reservation_id"] for r in bobs]
    alices = api.call("GET", "/v1/reservations?status=pending&limit=500").body["reservations"]
    assert rid in [r["reservation_id"] for r in alices]
    assert all(r["user_id"] == "alice" for r in alices)
    actives = api.call("GET", "/v1/reservations?status=active").body["reservations"]
    assert rid not in [r["reservation_id"] for r in actives]
    assert all(r["status"] == "active" for r in actives)


def test_an_ambiguous_prefix_is_409(api, local_cloud):
    ids = []
    with psycopg.connect(local_cloud.database_url) as conn:
        for suffix in ("1", "2"):
            rid = f"abcdef01-0000-4000-8000-00000000000{suffix}"
            ids.append(rid)
            conn.execute(
                "INSERT INTO reservations (reservation_id, user_id, gpu_type, gpu_count,"
                " duration_hours) VALUES (%s, 'alice', 't4', 1, 1) ON CONFLICT DO NOTHING",
                (rid,),
            )
    api.call("GET", "/v1/me")  # alice exists
    reply = api.call("GET", "/v1/reservations/abcdef01")
    assert reply.status == 409 and "more than one" in reply.body["message"]
    assert api.call("GET", f"/v1/reservations/{ids[0]}").status == 200


def test_pagination_and_bad_query_values(api):
    for _ in range(3):
        reserve(api, gpu_type="t4", gpu_count=1)
    page = api.call("GET", "/v1/reservations?limit=2&offset=1").body
    assert len(page["reservations"]) == 2 and (page["limit"], page["offset"]) == (2, 1)
    assert api.call("GET", "/v1/reservations?limit=0").status == 422
    assert api.call("GET", "/v1/reservations?status=bogus").status == 422


def test_request_bodies_are_json_objects(api):
    reply = api.send(
        "POST",
        "/v1/reservations",
        api.signed_headers("POST", "/v1/reservations", b"[1]", api.credentials("alice")),
        b"[1]",
    )
    assert reply.status == 422
    assert json.dumps(reply.body)


def test_cancel_is_recorded_once_and_queued_once(api, local_cloud):
    rid = reserve(api).body["reservation_id"]
    drain_jobs(local_cloud)
    first = api.call("POST", f"/v1/reservations/{rid[:8]}/cancel")
    again = api.call("POST", f"/v1/reservations/{rid}/cancel")
    assert (first.status, again.status) == (202, 202)
    assert first.body["cancel_requested_at"] is not None
    assert again.body["cancel_requested_at"] == first.body["cancel_requested_at"]
    assert [(j.kind, str(j.reservation_id)) for j in drain_jobs(local_cloud)] == [
        ("cancel_reservation", rid)
    ]


def test_nobody_cancels_someone_elses_reservation(api, local_cloud):
    rid = reserve(api, profile="alice").body["reservation_id"]
    drain_jobs(local_cloud)
    assert api.call("POST", f"/v1/reservations/{rid}/cancel", profile="bob").status == 404
    assert drain_jobs(local_cloud) == []


def test_cancelling_an_ended_reservation_is_409_naming_its_state(api, local_cloud):
    rid = reserve(api).body["reservation_id"]
    mark_ended(local_cloud.database_url, rid, "expired")
    reply = api.call("POST", f"/v1/reservations/{rid}/cancel")
    assert reply.status == 409 and "it is expired" in reply.body["message"]


def test_allowed_roles_refuse_other_principals_before_anything_is_written(
    api, local_cloud, monkeypatch
):
    from gpudev.settings import reset_settings_cache

    monkeypatch.setenv("ALLOWED_ROLES", "GpuDevUsers")
    reset_settings_cache()
    try:
        before = count_reservations(local_cloud)
        reply = reserve(api)
        assert reply.status == 403
        assert "gpu-dev accepts sessions of the roles GpuDevUsers" in reply.body["message"]
        assert "user/alice" in reply.body["message"]
        assert count_reservations(local_cloud) == before
    finally:
        monkeypatch.undo()
        reset_settings_cache()
    assert reserve(api).status == 202


def test_profiling_is_off_unless_asked_for_and_is_echoed_in_the_reservation(api, local_cloud):
    """carol's SSO role is the local cloud's PROFILING_ROLES (localcloud/stack.py)."""
    drain_jobs(local_cloud)
    plain = reserve(api)
    profiling = reserve(api, profile="carol", github_user="carol", profiling=True)
    assert (plain.status, profiling.status) == (202, 202)
    assert (plain.body["profiling"], profiling.body["profiling"]) == (False, True)
    shown = api.call("GET", f"/v1/reservations/{profiling.body['reservation_id']}", profile="carol")
    assert shown.status == 200 and shown.body["profiling"] is True
    with psycopg.connect(local_cloud.database_url) as conn:
        stored = conn.execute(
            "SELECT profiling FROM reservations WHERE reservation_id = %s",
            (plain.body["reservation_id"],),
        ).fetchone()
    assert stored == (False,)
    drain_jobs(local_cloud)


def _written(cloud) -> tuple[int, ...]:  # type: ignore[no-untyped-def]
    """Rows a refused request must not add: reservations, outbox jobs, users."""
    with psycopg.connect(cloud.database_url) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM reservations), (SELECT count(*) FROM outbox),"
            " (SELECT count(*) FROM users)"
        ).fetchone()
    assert row is not None
    return tuple(row)


@pytest.mark.parametrize("profile", ["alice", "bob"])
def test_profiling_asked_by_a_caller_outside_the_profiling_roles_is_403_and_writes_nothing(
    api, local_cloud, profile
):
    """alice and bob are IAM users: no role, so never one of gpudev:profilingRoles."""
    drain_jobs(local_cloud)
    before = _written(local_cloud)
    reply = reserve(api, profile=profile, github_user=profile, profiling=True)
    assert reply.status == 403, reply.body
    message = reply.body["message"]
    assert "gpudev:profilingRoles" in message and f"user/{profile}" in message
    assert "CAP_SYS_ADMIN" in message and reply.body["field"] == "profiling"
    assert reply.body["hint"].startswith("reserve without --profiling")
    assert _written(local_cloud) == before
    assert drain_jobs(local_cloud) == []
    assert reserve(api, profile=profile, github_user=profile).status == 202  # without: fine
    drain_jobs(local_cloud)


def test_no_profiling_roles_means_nobody_may_profile(api, local_cloud, monkeypatch):
    from gpudev.settings import reset_settings_cache

    monkeypatch.setenv("PROFILING_ROLES", "")
    reset_settings_cache()
    try:
        before = _written(local_cloud)
        reply = reserve(api, profile="carol", github_user="carol", profiling=True)
        assert reply.status == 403
        assert "gpudev:profilingRoles, and this deployment names none" in reply.body["message"]
        assert "assumed-role/AWSReservedSSO_GpuDevUsers_" in reply.body["message"]
        assert _written(local_cloud) == before
    finally:
        monkeypatch.undo()
        reset_settings_cache()


def test_a_profiling_value_that_is_not_a_boolean_is_422_and_writes_nothing(api, local_cloud):
    before = count_reservations(local_cloud)
    reply = reserve(api, profiling="perhaps")
    assert reply.status == 422, reply.body
    assert "profiling" in json.dumps(reply.body)
    assert count_reservations(local_cloud) == before
