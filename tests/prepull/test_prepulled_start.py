"""A start that does not wait on a cold pull (issue #33 item 5; docs/images.md, "Pre-pulled
images"): the availability updater keeps the pre-puller's DaemonSet pulling the default
image and the most used ones; once its pods have run on a node, a reservation there starts
with its image already present (the kubelet's `Pulled: ... already present on machine`, no
`Pulling`), while the node that first ran a new image pulled it for as long as its size."""

from __future__ import annotations

from typing import Any

from gpudev.prepuller.plan import IMAGES_ANNOTATION
from gpudev.settings import LifecycleSettings
from localcloud.registry import ACCOUNT_REGISTRY, LOCAL_TOOLS_IMAGE
from localcloud.stack import LocalCloud
from tests.support.api import ApiClient
from tests.support.waiting import wait_for

SYSTEM, NAME = "gpu-dev-prepuller", "gpu-dev-prepuller"
TEAM = f"{ACCOUNT_REGISTRY}/gpu-dev-images/team-cuda:1"


def reserve(api: ApiClient, **fields: Any) -> dict[str, Any]:
    body = {"gpu_type": "t4", "gpu_count": 1, "hours": 1, "github_user": "alice", **fields}
    reply = api.call("POST", "/v1/reservations", body=body)
    assert reply.status == 202, reply.body
    return dict(reply.body)


def wait_for_status(api: ApiClient, rid: str, status: str, timeout: float = 20) -> None:
    def reached() -> bool:
        shown = api.call("GET", f"/v1/reservations/{rid}")
        assert shown.status == 200, shown.body
        assert shown.body["status"] != "failed", shown.body
        return bool(shown.body["status"] == status)

    wait_for(reached, timeout, f"{rid[:8]} {status}")


def cancel(api: ApiClient, rid: str) -> None:
    assert api.call("POST", f"/v1/reservations/{rid}/cancel").status in (200, 202)


def pod_of(cloud: LocalCloud, rid: str) -> dict[str, Any]:
    assert cloud.kubernetes is not None
    (pod,) = cloud.kubernetes.store.list("pods", None, f"gpu-dev/reservation={rid}")["items"]
    return dict(pod)


def _daemon_set(cloud: LocalCloud) -> dict[str, Any]:
    assert cloud.kubernetes is not None
    return dict(cloud.kubernetes.store.get("daemonsets", SYSTEM, NAME))


def _rolled_out_with(cloud: LocalCloud, image: str) -> bool:
    """The DaemonSet lists `image`, and every node it wants has run its current pod."""
    daemon_set = _daemon_set(cloud)
    listed = daemon_set["spec"]["template"]["metadata"].get("annotations", {})
    status = daemon_set.get("status") or {}
    desired = status.get("desiredNumberScheduled", 0)
    return (
        image in listed.get(IMAGES_ANNOTATION, "").split()
        and status.get("observedGeneration") == daemon_set["metadata"]["generation"]
        and desired > 0
        and status.get("updatedNumberScheduled") == desired
        and status.get("numberReady") == desired
    )


def _pull_events(cloud: LocalCloud, pod: dict[str, Any]) -> list[tuple[str, str]]:
    assert cloud.kubernetes is not None
    items = cloud.kubernetes.store.list(
        "events",
        pod["metadata"]["namespace"],
        field_selector=f"involvedObject.uid={pod['metadata']['uid']}",
    )["items"]
    return [(e["reason"], e["message"]) for e in items if e["reason"] in ("Pulling", "Pulled")]


def test_the_default_image_is_pre_pulled_and_a_reservation_starts_with_no_pull(
    api: Any, local_cloud: LocalCloud
):
    default = local_cloud.options.pod_image or LifecycleSettings().pod_image
    wait_for(lambda: _rolled_out_with(local_cloud, default), 90, "the pre-puller's rollout")
    template = _daemon_set(local_cloud)["spec"]["template"]["spec"]
    assert template["initContainers"][0]["image"] == LOCAL_TOOLS_IMAGE
    assert template["initContainers"][1]["image"] == default  # the default image first

    rid = reserve(api)["reservation_id"]
    wait_for_status(api, rid, "active", timeout=60)
    pod = pod_of(local_cloud, rid)
    assert set(_pull_events(local_cloud, pod)) == {
        ("Pulled", f'Container image "{default}" already present on machine')
    }  # once per container of the image (the Jupyter check's init container shares it)
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")


def test_a_used_image_joins_the_list_and_the_other_node_starts_it_with_no_pull(
    api: Any, local_cloud: LocalCloud
):
    # The first use: a whole t4 node, which pulls the team image (6.2 GB) for its size.
    first = reserve(api, image=TEAM, gpu_count=4)
    wait_for_status(api, first["reservation_id"], "active", timeout=90)
    cold = pod_of(local_cloud, first["reservation_id"])
    pulls = _pull_events(local_cloud, cold)
    assert ("Pulling", f'Pulling image "{cold["spec"]["containers"][0]["image"]}"') in pulls
    pulled_ref = cold["spec"]["containers"][0]["image"]  # the digest the pod runs
    assert "@sha256:" in pulled_ref

    # The updater lists it; the pre-puller's pods pull it on every node.
    wait_for(lambda: _rolled_out_with(local_cloud, pulled_ref), 90, "the team image's rollout")

    # The other t4 node (the first is full) never ran it but has it: no pull.
    second = reserve(api, image=TEAM)
    wait_for_status(api, second["reservation_id"], "active", timeout=60)
    warm = pod_of(local_cloud, second["reservation_id"])
    assert warm["spec"]["nodeName"] != cold["spec"]["nodeName"]
    assert set(_pull_events(local_cloud, warm)) == {
        ("Pulled", f'Container image "{pulled_ref}" already present on machine')
    }
    for reservation in (first, second):
        cancel(api, reservation["reservation_id"])
