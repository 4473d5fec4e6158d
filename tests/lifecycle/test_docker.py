"""`reserve --docker` end to end on the local cloud (docs/images.md#docker-inside-the-dev-
server): the pod runs in gpu-dev-docker with a privileged docker:dind sidecar beside the dev
container, the reservation is active once both run, `show` says Docker is on, and a cancel
leaves nothing of it in that namespace. Where it makes no sense (several nodes, with
profiling) it is 422 with a sentence and writes nothing."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from gpudev.cluster.pod_docker import DOCKER_CONTAINER, DOCKER_HOST
from tests.lifecycle.helpers import (
    assert_nothing_left,
    cancel,
    objects_of,
    reserve,
    stop_execution,
    sweep,
    wait_for_status,
)
from tests.support.waiting import wait_for

NAMESPACE = "gpu-dev-docker"
# --docker takes a whole node (its daemon is root on it): a t4 node has 4 GPUs.
WHOLE_T4 = 4


def test_a_docker_reservation_runs_its_sidecar_in_the_docker_namespace_and_cancel_clears_it(
    api, local_cloud, gpu_dev
):
    reservation = reserve(api, docker=True, gpu_count=WHOLE_T4)
    rid = reservation["reservation_id"]
    assert reservation["docker"] is True
    active = wait_for_status(api, rid, "active")
    assert active["docker"] is True

    (pod,) = objects_of(local_cloud, rid)["pods"]
    assert pod["metadata"]["namespace"] == NAMESPACE
    dev, sidecar = pod["spec"]["containers"]
    assert sidecar["name"] == DOCKER_CONTAINER and sidecar["securityContext"]["privileged"]
    assert {"name": "DOCKER_HOST", "value": DOCKER_HOST} in dev["env"]
    statuses = {s["name"]: s for s in pod["status"]["containerStatuses"]}
    assert "running" in statuses[DOCKER_CONTAINER]["state"]
    assert statuses[DOCKER_CONTAINER]["ready"] and statuses["gpu-dev"]["ready"]

    # its output is shipped from gpu-dev-docker too (deploy/kubernetes/fluent-bit.yaml)
    def messages() -> list[str]:
        reply = api.call("GET", f"/v1/reservations/{rid}/logs")
        assert reply.status == 200, reply.body
        return [line["message"] for line in reply.body["lines"]]

    wait_for(messages, message="the pod's output shipped from gpu-dev-docker")
    assert any("starting sshd" in line for line in messages())
    wait_for(
        lambda: any("API listen on /run/gpu-dev-docker/docker.sock" in m for m in messages()),
        message="the Docker daemon's output shipped with the pod's",
    )

    panel = gpu_dev("show", rid[:8])
    assert panel.exit_code == 0, panel.output
    assert "Docker:  on" in panel.stdout
    assert json.loads(gpu_dev("--output", "json", "show", rid[:8]).stdout)["docker"] is True

    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    assert_nothing_left(local_cloud, rid)
    store = local_cloud.kubernetes.store
    wait_for(
        lambda: not store.list("pods", NAMESPACE)["items"],
        message="no pod left in gpu-dev-docker",
    )
    for kind in ("services", "configmaps", "secrets", "networkpolicies"):
        assert store.list(kind, NAMESPACE, f"gpu-dev/reservation={rid}")["items"] == []


def test_an_images_own_entrypoint_gets_docker_too(api, local_cloud):
    """With --preserve-entrypoint the image's entrypoint finds DOCKER_HOST and the socket's
    group (the pod's supplementalGroups): the two go together."""
    fields = {"image": "ghcr.io/pytorch/pytorch-nightly", "preserve_entrypoint": True}
    rid = reserve(api, docker=True, gpu_count=WHOLE_T4, **fields)["reservation_id"]
    wait_for_status(api, rid, "active")
    (pod,) = objects_of(local_cloud, rid)["pods"]
    assert pod["metadata"]["namespace"] == NAMESPACE
    dev, sidecar = pod["spec"]["containers"]
    assert "command" not in dev and {"name": "DOCKER_HOST", "value": DOCKER_HOST} in dev["env"]
    assert sidecar["name"] == DOCKER_CONTAINER
    assert pod["spec"]["securityContext"]["supplementalGroups"] == [2375]
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    assert_nothing_left(local_cloud, rid)


def test_the_sweeper_deletes_what_a_lost_docker_reservation_left_in_its_namespace(api, local_cloud):
    rid = reserve(api, docker=True, gpu_count=WHOLE_T4, hours=0.6)["reservation_id"]
    wait_for_status(api, rid, "active")
    stop_execution(local_cloud, rid)
    with psycopg.connect(local_cloud.database_url, autocommit=True) as conn:
        conn.execute("DELETE FROM reservations WHERE reservation_id = %s", (rid,))
    left = sum(len(items) for items in objects_of(local_cloud, rid).values())
    namespaces = {
        o["metadata"]["namespace"] for items in objects_of(local_cloud, rid).values() for o in items
    }
    assert left and namespaces == {NAMESPACE}

    swept = sweep(local_cloud)

    assert swept["statistics"]["objects_deleted"] >= left
    assert_nothing_left(local_cloud, rid)


def _count(api: Any, profile: str) -> int:
    reply = api.call("GET", "/v1/reservations?limit=200", profile=profile)
    return len(reply.body["reservations"])


@pytest.mark.parametrize(
    ("profile", "fields", "sentence"),
    [
        (
            "alice",
            {"gpu_type": "h100", "gpu_count": 16},
            "--docker runs on one node, and this request needs 2",
        ),
        ("carol", {"profiling": True}, "--docker and --profiling do not go together"),
        ("alice", {"gpu_count": 1}, "--docker takes a whole node, and a t4 node has 4 GPUs"),
        ("alice", {"gpu_type": "cpu-x86", "gpu_count": 0}, "cpu-x86 nodes are shared"),
    ],
)
def test_docker_where_it_makes_no_sense_is_refused_and_writes_nothing(
    api, profile: str, fields: dict[str, Any], sentence: str
):
    before = _count(api, profile)
    body = {"gpu_type": "t4", "gpu_count": 1, "hours": 1, "github_user": "alice"}
    body |= {"docker": True, **fields}
    reply = api.call("POST", "/v1/reservations", profile=profile, body=body)
    assert reply.status == 422, reply.body
    assert sentence in reply.body["message"]
    assert reply.body["field"] == "docker"
    assert _count(api, profile) == before
