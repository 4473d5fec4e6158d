"""`reserve --image REF --preserve-entrypoint` end to end on the local cloud
(docs/images.md#the-images-own-entrypoint): the pod runs its image's own entrypoint (no
command, no args, no SSH readiness probe, no Jupyter check, no SSH Service), the reservation
is active once the container runs, `show` says there is no SSH and points at `gpu-dev logs`,
and the logs carry what the container printed. A request where it makes no sense (no image,
with Jupyter, on several nodes) is 422 with a sentence and writes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from localcloud.kubernetes.container_logs import ENTRYPOINT_OUTPUT
from localcloud.kubernetes.container_restarts import Crash
from tests.lifecycle.helpers import objects_of, reserve, wait_for_status
from tests.support.waiting import wait_for

IMAGE = "ghcr.io/pytorch/pytorch-nightly"


def _messages(api: Any, rid: str) -> list[str]:
    reply = api.call("GET", f"/v1/reservations/{rid}/logs")
    assert reply.status == 200, reply.body
    return [line["message"] for line in reply.body["lines"]]


def test_the_images_own_entrypoint_runs_without_ssh_and_its_output_is_in_the_logs(
    api, local_cloud, gpu_dev
):
    reservation = reserve(api, image=IMAGE, preserve_entrypoint=True)
    rid = reservation["reservation_id"]
    assert reservation["preserve_entrypoint"] is True
    active = wait_for_status(api, rid, "active")
    assert active["preserve_entrypoint"] is True
    assert active["node_port"] is None  # no sshd, so no SSH Service to reach it by

    objects = objects_of(local_cloud, rid)
    (pod,) = objects["pods"]
    (container,) = pod["spec"]["containers"]
    assert container["image"].endswith(f"@{active['image_digest']}")
    for field in ("command", "args", "readinessProbe", "ports"):
        assert field not in container
    assert "initContainers" not in pod["spec"]
    assert not [s for s in objects.get("services", []) if s["spec"].get("type") == "NodePort"]

    wait_for(lambda: _messages(api, rid), message="the container's output shipped")
    assert _messages(api, rid) == [f"{ENTRYPOINT_OUTPUT} {container['image']}"]
    shown = gpu_dev("logs", rid[:8])
    assert shown.exit_code == 0, shown.output
    assert ENTRYPOINT_OUTPUT in shown.stdout

    panel = gpu_dev("show", rid[:8])
    assert panel.exit_code == 0, panel.output
    assert "SSH:     none: the image's own entrypoint runs" in panel.stdout
    assert f"gpu-dev logs {rid[:8]}" in panel.stdout
    assert "gpu-dev connect" not in panel.stdout
    as_json = json.loads(gpu_dev("--output", "json", "show", rid[:8]).stdout)
    assert as_json["preserve_entrypoint"] is True


def _count(api: Any) -> int:
    return len(api.call("GET", "/v1/reservations?limit=200").body["reservations"])


@pytest.mark.parametrize(
    ("fields", "sentence"),
    [
        ({}, "name the image with --image"),
        ({"image": IMAGE, "jupyter": True}, "--preserve-entrypoint and --jupyter do not go"),
        (
            {"image": IMAGE, "gpu_type": "h100", "gpu_count": 16},
            "--preserve-entrypoint runs on one node, and this request needs 2",
        ),
    ],
)
def test_preserve_entrypoint_where_it_makes_no_sense_is_refused_and_writes_nothing(
    api, fields: dict[str, Any], sentence: str
):
    before = _count(api)
    body = {"gpu_type": "t4", "gpu_count": 1, "hours": 1, "github_user": "alice"}
    body |= {"preserve_entrypoint": True, **fields}
    reply = api.call("POST", "/v1/reservations", body=body)
    assert reply.status == 422, reply.body
    assert sentence in reply.body["message"]
    assert reply.body["field"] == "preserve_entrypoint"
    assert _count(api) == before


def test_an_entrypoint_that_exits_fails_the_start_with_its_log_tail(api, local_cloud):
    kubelet = local_cloud.cluster.kubelet
    digest = reserve(api, image=IMAGE, preserve_entrypoint=True)
    wait_for_status(api, digest["reservation_id"], "active")  # the image's pull reference
    (pod,) = objects_of(local_cloud, digest["reservation_id"])["pods"]
    image = pod["spec"]["containers"][0]["image"]
    kubelet.crashing_images = {image: Crash(exit_code=3, log="config file missing")}
    try:
        rid = reserve(api, image=IMAGE, preserve_entrypoint=True)["reservation_id"]
        failed = wait_for_status(api, rid, "failed", timeout=60)
    finally:
        kubelet.crashing_images = {}
    assert "exit 3" in failed["failure_reason"], failed["failure_reason"]
