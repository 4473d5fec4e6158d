"""Extend while active; the queue's order, positions and ETAs; EASY backfill; multinode
all-or-nothing."""

from __future__ import annotations

import time
from datetime import datetime

import psycopg

from tests.lifecycle.conftest import MINUTE, SECONDS_PER_HOUR
from tests.lifecycle.helpers import objects_of, reserve, secret_data, show, wait_for_status
from tests.support.waiting import wait_for


def _timestamp(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def _queued(api, rid: str, profile: str = "alice") -> dict:
    return wait_for(
        lambda: (r := show(api, rid, profile))["status"] == "queued" and r["queue_position"] and r,
        message=f"{rid[:8]} queued with a position",
    )


def test_extend_moves_the_expiry_and_resets_the_warnings(api, local_cloud):
    rid = reserve(api, hours=0.6)["reservation_id"]
    active = wait_for_status(api, rid, "active")
    first_expiry = _timestamp(active["expires_at"])
    wait_for(lambda: show(api, rid)["warning_text"], message="the 30-minute warning")
    reply = api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": 1})
    assert reply.status == 202, reply.body
    # the reply says the new expiry at once (launch + the hours), before the checkpoint
    assert abs(_timestamp(reply.body["expires_at"]) - first_expiry - SECONDS_PER_HOUR) < 1
    extended = wait_for(
        lambda: (r := show(api, rid))["warning_text"] is None and r,
        message="the extension applied: its warnings start over",
    )
    assert abs(_timestamp(extended["expires_at"]) - first_expiry - SECONDS_PER_HOUR) < 1
    assert extended["warning_text"] is None
    configmap = objects_of(local_cloud, rid)["configmaps"][0]["data"]
    assert configmap["warning_level"] == ""
    # the pod's banner has the expiry the reply said
    assert abs(_timestamp(configmap["expires_at"]) - _timestamp(reply.body["expires_at"])) < 1
    refused = api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": 24})
    refused = api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": 24})
    assert refused.status == 422 and "at most 48 h in total" in refused.body["message"]
    assert show(api, rid)["status"] == "active"
    # The timeline: the warning sent (once, whatever checkpoints ran since), then the hours.
    timeline = api.call("GET", f"/v1/reservations/{rid}/events").body["events"]
    kinds = [e["kind"] for e in timeline]
    warnings = [e["detail"] for e in timeline if e["kind"] == "warning"]
    assert len(warnings) == 1 and warnings[0].startswith("expiry warning sent: INFO: "), timeline
    assert kinds.index("warning") < kinds.index("extension"), kinds


def test_added_users_and_jupyter_reach_the_pod(api, local_cloud):
    rid = reserve(api, github_user="alice")["reservation_id"]
    wait_for_status(api, rid, "active")
    api.call("POST", f"/v1/reservations/{rid}/users", body={"github_username": "octocat"})
    api.call("PUT", f"/v1/reservations/{rid}/jupyter")

    def applied():
        objects = objects_of(local_cloud, rid)
        keys = secret_data(objects["secrets"][0])
        jupyter = objects["configmaps"][0]["data"]["jupyter"]
        added = "octocat@github" in keys.get("user.gh-octocat", "")
        # one checkpoint writes the flag, then the keys: wait for both
        return added and jupyter == "true" and objects

    objects = wait_for(applied, message="keys and Jupyter flag applied")
    keys = secret_data(objects["secrets"][0])
    assert "alice@github" in keys["authorized_keys"], "the owner's keys open the dev account"
    assert "octocat" not in keys["authorized_keys"], "an added user has an account of their own"
    shown = wait_for(lambda: (r := show(api, rid))["jupyter_url"] and r, message="Jupyter URL")
    # Jupyter is reached through SSH only: a localhost URL, and no Service for it
    assert shown["jupyter_url"] == f"http://localhost:8888/lab?token={_token(local_cloud, rid)}"
    services = objects_of(local_cloud, rid)["services"]
    assert sorted(s["metadata"]["name"].rsplit("-", 1)[1] for s in services) == ["headless", "ssh"]
    # sshd's host key, made at provision, came through the Secret's refresh unchanged
    assert keys["ssh_host_ed25519_key.pub"].strip() == shown["ssh_host_keys"][0]
    assert shown["ssh_host_keys"][0].startswith("ssh-ed25519 ")


def _token(local_cloud, rid: str) -> str:
    with psycopg.connect(local_cloud.database_url) as conn:
        (token,) = conn.execute(
            "SELECT jupyter_token FROM reservations WHERE reservation_id = %s", (rid,)
        ).fetchone()
    return str(token)


def test_a_removed_user_leaves_the_pods_keys(api, local_cloud):
    """The pod's control loop removes the account whose entry is gone (its keys, sessions
    and home: tests/unit/test_startup_sandbox.py); the others keep theirs."""
    rid = reserve(api, github_user="alice")["reservation_id"]
    wait_for_status(api, rid, "active")
    for user in ("octocat", "bob"):
        api.call("POST", f"/v1/reservations/{rid}/users", body={"github_username": user})

    def keys() -> dict[str, str]:
        return secret_data(objects_of(local_cloud, rid)["secrets"][0])

    wait_for(lambda: {"user.gh-octocat", "user.gh-bob"} <= set(keys()), message="both added")
    reply = api.call("DELETE", f"/v1/reservations/{rid}/users/octocat")
    assert reply.status == 202 and reply.body["secondary_users"] == ["bob"]
    left = wait_for(
        lambda: "user.gh-octocat" not in (k := keys()) and k, message="octocat's entry gone"
    )
    assert "bob@github" in left["user.gh-bob"] and "alice@github" in left["authorized_keys"]
    assert show(api, rid)["status"] == "active"


def test_queue_order_positions_and_etas(api, local_cloud):
    short = reserve(api, gpu_type="h100", gpu_count=8, hours=0.4)["reservation_id"]
    long = reserve(api, gpu_type="h100", gpu_count=8, hours=1)["reservation_id"]
    short_active = wait_for_status(api, short, "active")
    wait_for_status(api, long, "active")
    first = reserve(api, gpu_type="h100", gpu_count=4, hours=0.2, profile="alice")
    second = reserve(api, gpu_type="h100", gpu_count=8, hours=0.2, profile="bob")
    alice = _queued(api, first["reservation_id"])
    bob = _queued(api, second["reservation_id"], "bob")
    assert (alice["queue_position"], bob["queue_position"]) == (1, 2)
    # both wait for the short holder's end; bob's 8 GPUs then need alice's 4 to end too
    until_short_ends = (_timestamp(short_active["expires_at"]) - time.time()) / MINUTE
    assert abs(alice["estimated_wait_minutes"] - until_short_ends) <= 3
    assert bob["estimated_wait_minutes"] >= alice["estimated_wait_minutes"] + 0.2 * 60 - 3
    # `avail` shows a wait while something is queued: a new request would queue behind bob
    types = api.call("GET", "/v1/gpu/availability").body["gpu_types"]
    h100 = next(t for t in types if t["gpu_type"] == "h100")
    assert h100["queue_length"] >= 2
    assert h100["estimated_wait_minutes"] >= bob["estimated_wait_minutes"] - 3
    started_alice = wait_for_status(api, first["reservation_id"], "active", timeout=40)
    assert show(api, second["reservation_id"], "bob")["status"] == "queued"
    started_bob = wait_for_status(
        api, second["reservation_id"], "active", timeout=40, profile="bob"
    )
    assert _timestamp(started_alice["launched_at"]) < _timestamp(started_bob["launched_at"])


def test_backfill_never_delays_the_head(api, local_cloud):
    # node A: 8 of 8 GPUs for 2 h (72 s: past the head's start however loaded the machine,
    # else node A frees and `delaying` rightly gets it); node B: 4 of 8 GPUs for 0.6 h (21.6 s)
    full = reserve(api, gpu_type="h100", gpu_count=8, hours=2)["reservation_id"]
    wait_for_status(api, full, "active")
    half = reserve(api, gpu_type="h100", gpu_count=4, hours=0.6)["reservation_id"]
    wait_for_status(api, half, "active")
    head = reserve(api, gpu_type="h100", gpu_count=8, hours=0.2)["reservation_id"]
    _queued(api, head)
    # ends after the head's reserved start on node B: it would delay the head
    delaying = reserve(api, gpu_type="h100", gpu_count=1, hours=1, profile="bob")
    # ends well before the head can start, counting the 6 s a pod may take to be ready
    # (a grant's expected end: that allowance, then 3.6 s): fits in the gap
    filling = reserve(api, gpu_type="h100", gpu_count=1, hours=0.1, profile="bob")
    wait_for_status(api, filling["reservation_id"], "active", profile="bob")
    assert show(api, delaying["reservation_id"], "bob")["status"] == "queued"
    assert show(api, head)["status"] == "queued"
    started = wait_for_status(api, head, "active", timeout=40)
    assert show(api, delaying["reservation_id"], "bob")["status"] == "queued"
    assert started["status"] == "active"


def test_multinode_takes_two_whole_nodes_or_waits(api, local_cloud):
    blocker = reserve(api, gpu_type="h100", gpu_count=1, hours=0.2)["reservation_id"]
    wait_for_status(api, blocker, "active")
    rid = reserve(api, gpu_type="h100", gpu_count=16, hours=0.3)["reservation_id"]
    _queued(api, rid)
    assert objects_of(local_cloud, rid)["pods"] == []
    with psycopg.connect(local_cloud.database_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM allocations WHERE reservation_id = %s", (rid,)
        ).fetchone() == (0,)
    wait_for_status(api, rid, "active", timeout=40)
    pods = objects_of(local_cloud, rid)["pods"]
    assert len(pods) == 2
    assert len({p["spec"]["nodeName"] for p in pods}) == 2
    envs = [{e["name"]: e["value"] for e in p["spec"]["containers"][0]["env"]} for p in pods]
    assert sorted(e["NODE_RANK"] for e in envs) == ["0", "1"]
    assert {e["NNODES"] for e in envs} == {"2"}
    assert {e["NPROC_PER_NODE"] for e in envs} == {"8"}
    assert {e["MASTER_ADDR"] for e in envs} == {f"gpu-dev-{rid[:8]}-0.gpu-dev-{rid[:8]}-headless"}
    assert {e["MASTER_PORT"] for e in envs} == {"29500"}
