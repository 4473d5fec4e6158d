"""A reservation's pod output in CloudWatch Logs (issue #32): the local cloud's kubelet writes
what each container prints into moto's log group as the cluster's Fluent Bit would (one
stream per pod, `<reservation id>.<pod name>`), and `gpu-dev logs` reads it back through
`GET /v1/reservations/{id}/logs`: the start-up steps of an active reservation, each run of a
crashing container, after the pod is gone; nothing for a pod whose image never pulled;
another user's is 404."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from cdk_app.declaration import POD_LOG_GROUP
from localcloud.kubernetes.container_restarts import Crash
from tests.lifecycle.conftest import DEV_IMAGE
from tests.lifecycle.helpers import cancel, objects_of, reserve, wait_for_status
from tests.support.waiting import wait_for

STEPS = [
    "gpu-dev: starting the dev server (node 0)",
    "gpu-dev: disk first use: default dotfiles copied to the home directory",
    "gpu-dev: installing the SSH keys",
    "gpu-dev: starting sshd on port 22 (ready when it prints: Server listening)",
]


def _messages(api: Any, rid: str, query: str = "", profile: str = "alice") -> list[str]:
    reply = api.call("GET", f"/v1/reservations/{rid}/logs{query}", profile=profile)
    assert reply.status == 200, reply.body
    return [line["message"] for line in reply.body["lines"]]


def test_an_active_reservations_logs_are_its_start_up_steps(api, local_cloud, gpu_dev):
    rid = reserve(api)["reservation_id"]
    wait_for_status(api, rid, "active")
    wait_for(lambda: len(_messages(api, rid)) >= len(STEPS) + 2, message="the lines shipped")
    shown = gpu_dev("logs", rid[:8])
    assert shown.exit_code == 0, shown.output
    printed = shown.stdout.splitlines()
    # node 0's Jupyter check (an init container) first, then the startup script and sshd
    assert printed[0] == "jupyter=available"
    assert [line.split(" ", 1)[1] for line in printed[1 : len(STEPS) + 1]] == STEPS
    assert printed[-1] == "Server listening on :: port 22."
    # As Fluent Bit names it: one stream for the pod, the reservation id in its name.
    # By prefix: one page holds 50 streams, and this tier's tests share the group.
    streams = local_cloud.aws.client("logs").describe_log_streams(
        logGroupName=POD_LOG_GROUP, logStreamNamePrefix=rid
    )
    ours = [s["logStreamName"] for s in streams["logStreams"]]
    assert ours == [f"{rid}.gpu-dev-{rid[:8]}"]

    as_json = gpu_dev("--output", "json", "logs", rid, "--node", "0")
    lines = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert {line["node"] for line in lines} == {0} and len(lines) == len(printed)
    assert _messages(api, rid, "?since=2h") == [line["message"] for line in lines]
    first = api.call("GET", f"/v1/reservations/{rid}/logs?limit=2").body
    second = api.call("GET", f"/v1/reservations/{rid}/logs?limit=2&next={first['next']}").body
    assert [x["message"] for x in first["lines"] + second["lines"]] == _messages(api, rid)[:4]


def test_another_users_logs_are_404_and_bad_parameters_say_what_to_change(api, gpu_dev):
    rid = reserve(api)["reservation_id"]
    other = api.call("GET", f"/v1/reservations/{rid}/logs", profile="bob")
    assert other.status == 404 and "no reservation" in other.body["message"]
    refused = gpu_dev("logs", rid, profile="bob")
    assert refused.exit_code == 1 and "no reservation" in refused.stderr
    for query, field in (
        ("since=10", "since"),
        ("since=2999-01-01T00:00:00Z", "since"),
        ("node=1", "node"),
        ("node=-1", "node"),
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("next=nonsense", "next"),
    ):
        reply = api.call("GET", f"/v1/reservations/{rid}/logs?{query}")
        assert reply.status == 422, (query, reply.body)
        assert reply.body["field"] == field, (query, reply.body)
    bad_node = gpu_dev("logs", rid, "--node", "1")
    assert bad_node.exit_code == 1 and "node 1: the reservation has node 0" in bad_node.stderr


def test_an_operator_reads_anyones_logs_through_the_same_service(api, gpu_dev):
    rid = reserve(api)["reservation_id"]
    wait_for_status(api, rid, "active")
    wait_for(lambda: len(_messages(api, rid)) >= len(STEPS) + 2, message="the lines shipped")
    seen = api.call("GET", f"/v1/admin/reservations/{rid[:8]}/logs", profile="carol")
    assert seen.status == 200, seen.body
    assert [line["message"] for line in seen.body["lines"]] == _messages(api, rid)
    assert api.call("GET", f"/v1/admin/reservations/{rid}/logs", profile="bob").status == 403
    bad = api.call("GET", f"/v1/admin/reservations/{rid}/logs?since=10", profile="carol")
    assert bad.status == 422 and bad.body["field"] == "since"
    shown = gpu_dev("admin", "logs", rid, "--node", "0", profile="carol")
    assert shown.exit_code == 0, shown.output
    assert shown.stdout.splitlines()[-1] == "[node 0] Server listening on :: port 22."
    refused = gpu_dev("admin", "logs", rid, profile="alice")
    assert refused.exit_code == 1 and "operator route" in refused.stderr


def test_a_pod_whose_image_never_pulled_ships_nothing(api, local_cloud):
    local_cloud.cluster.kubelet.image_pulls_fail = True
    rid = reserve(api)["reservation_id"]
    wait_for(lambda: objects_of(local_cloud, rid)["pods"], message="the pod created")
    wait_for(
        lambda: "ImagePullBackOff" in json.dumps(objects_of(local_cloud, rid)["pods"]),
        message="the image pull failing",
    )
    assert _messages(api, rid) == []
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")


@pytest.fixture
def crashing(local_cloud: Any) -> Iterator[None]:
    local_cloud.cluster.kubelet.crashing_images = {
        DEV_IMAGE: Crash(1, message="no sshd in this image\n", log="one\ntwo")
    }
    yield
    local_cloud.cluster.kubelet.crashing_images = {}


def test_a_crashing_pods_runs_are_shipped_and_outlive_it(api, local_cloud, crashing):
    rid = reserve(api)["reservation_id"]
    wait_for_status(api, rid, "failed", timeout=60)
    wait_for(lambda: objects_of(local_cloud, rid)["pods"] == [], message="the pod deleted")
    crashed = [m for m in _messages(api, rid) if m != "jupyter=available"]
    runs = crashed.count("one")
    assert runs >= 1 and crashed == ["one", "two"] * runs


def test_follow_prints_until_the_reservation_ends_and_ctrl_c_stops_it(
    api, local_cloud, gpu_dev, monkeypatch
):
    rid = reserve(api)["reservation_id"]
    wait_for_status(api, rid, "active")
    wait_for(lambda: len(_messages(api, rid)) >= len(STEPS) + 2, message="the lines shipped")
    done: dict[str, Any] = {}
    follower = threading.Thread(target=lambda: done.update(result=gpu_dev("logs", rid, "-f")))
    follower.start()
    cancel(api, rid)
    follower.join(timeout=90)
    assert not follower.is_alive(), "follow did not stop after the reservation ended"
    result = done["result"]
    assert result.exit_code == 0, result.output
    printed = result.stdout.splitlines()
    assert printed.count("Server listening on :: port 22.") == 1  # each line once
    assert f"Reservation {rid[:8]} has ended." in result.stderr

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    live = reserve(api)["reservation_id"]
    wait_for_status(api, live, "active")
    monkeypatch.setattr("gpudev_cli.commands.logs.time.sleep", interrupted)
    stopped = gpu_dev("logs", live, "--follow")
    assert stopped.exit_code == 0 and "Stopped following." in stopped.stderr


def test_a_multinode_reservations_lines_carry_their_node_and_one_node_can_be_asked(api, gpu_dev):
    rid = reserve(api, gpu_type="h100", gpu_count=16)["reservation_id"]
    wait_for_status(api, rid, "active", timeout=60)

    def both_nodes_started() -> list[dict[str, Any]]:
        lines = api.call("GET", f"/v1/reservations/{rid}/logs").body["lines"]
        started = [line for line in lines if "starting the dev server" in line["message"]]
        return lines if len(started) == 2 else []

    lines = wait_for(both_nodes_started, message="both pods' lines shipped")
    for line in lines:
        if "starting the dev server" in line["message"]:
            assert line["message"].endswith(f"(node {line['node']})")
    one = api.call("GET", f"/v1/reservations/{rid}/logs?node=1").body["lines"]
    assert one and {line["node"] for line in one} == {1}
    printed = gpu_dev("logs", rid).stdout.splitlines()
    assert any(p.startswith("[node 1] ") for p in printed)
    assert all(p.startswith(("[node 0] ", "[node 1] ")) for p in printed)
