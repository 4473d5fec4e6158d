"""The stand-in deletes pods as kube-apiserver does (Terminating for the grace period, still
holding the node's GPUs), its kubelet admits pods pinned with nodeName like a real one, and
its faults reach verbs beyond create. The e2e cloud compresses grace periods tenfold
(`termination_seconds_scale=0.1`): our pods' 10 s is 1 s here."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from localcloud.kubernetes.server import Faults
from localcloud.stack import LocalCloud
from tests.support.waiting import wait_for

NAMESPACE = "gpu-dev"
GRACE = 10  # our pods' terminationGracePeriodSeconds
SCALE = 0.1  # the e2e cloud's termination_seconds_scale


def _pod(
    name: str,
    gpus: int,
    *,
    node: str | None = None,
    gpu_type: str = "h100",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": GRACE,
        "containers": [
            {
                "name": "gpu-dev",
                "image": "pytorch/pytorch:latest",
                "command": ["bash", "-c", "sleep infinity"],
                "resources": {
                    "requests": {"nvidia.com/gpu": str(gpus)},
                    "limits": {"nvidia.com/gpu": str(gpus)},
                },
            }
        ],
    }
    if node:
        spec["nodeName"] = node  # pinned, as our lifecycle does: the scheduler is skipped
    else:
        spec["nodeSelector"] = {"GpuType": gpu_type}
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def _phase(core: client.CoreV1Api, name: str) -> str | None:
    try:
        return str(core.read_namespaced_pod(name, NAMESPACE).status.phase)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def _running(core: client.CoreV1Api, name: str) -> Any:
    return wait_for(
        lambda: (p := core.read_namespaced_pod(name, NAMESPACE)).status.phase == "Running" and p,
        message=f"{name} running",
    )


def _gone(core: client.CoreV1Api, name: str) -> None:
    wait_for(lambda: _phase(core, name) is None, message=f"{name} deleted")


def _idle_node(core: client.CoreV1Api, gpu_type: str) -> str:
    """A node of the type that no pod uses (pods of earlier tests may still terminate)."""

    def idle() -> str | None:
        for node in core.list_node(label_selector=f"GpuType={gpu_type}").items:
            name = str(node.metadata.name)
            if not core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={name}").items:
                return name
        return None

    return str(wait_for(idle, message=f"an idle {gpu_type} node"))


@pytest.fixture
def faults(local_cloud: LocalCloud) -> Iterator[Faults]:
    assert local_cloud.kubernetes is not None
    yield local_cloud.kubernetes.faults
    local_cloud.kubernetes.faults.clear()


def test_a_deleted_pod_terminates_for_its_grace_period_still_holding_its_gpus(
    core: client.CoreV1Api,
):
    run = uuid.uuid4().hex[:6]
    node = _idle_node(core, "h100")
    core.create_namespaced_pod(NAMESPACE, _pod(f"old-{run}", 8, node=node))
    _running(core, f"old-{run}")

    deleted_at = time.monotonic()
    answered = core.delete_namespaced_pod(f"old-{run}", NAMESPACE)
    assert answered.metadata.deletion_timestamp is not None
    assert answered.metadata.deletion_grace_period_seconds == GRACE

    # Terminating: still listed, still Running, still on the node.
    listed = core.list_namespaced_pod(NAMESPACE, field_selector=f"spec.nodeName={node}").items
    assert [(p.metadata.name, p.status.phase) for p in listed] == [(f"old-{run}", "Running")]
    assert listed[0].metadata.deletion_timestamp == answered.metadata.deletion_timestamp

    # A pod pinned to that node meanwhile is rejected by the kubelet: the GPUs are in use.
    core.create_namespaced_pod(NAMESPACE, _pod(f"early-{run}", 4, node=node))
    rejected = wait_for(
        lambda: (
            (p := core.read_namespaced_pod(f"early-{run}", NAMESPACE)).status.phase == "Failed"
            and p
        ),
        message="early pod rejected",
    )
    assert rejected.status.reason == "OutOfnvidia.com/gpu"
    assert rejected.status.message == (
        "Pod was rejected: Node didn't have enough resource: nvidia.com/gpu, "
        "requested: 4, used: 8, capacity: 8"
    )
    assert not rejected.status.container_statuses
    assert _phase(core, f"old-{run}") == "Running"

    # The kubelet deletes the old pod once its (compressed) grace period has passed.
    _gone(core, f"old-{run}")
    assert time.monotonic() - deleted_at >= GRACE * SCALE * 0.9
    core.create_namespaced_pod(NAMESPACE, _pod(f"later-{run}", 4, node=node))
    assert _running(core, f"later-{run}").spec.node_name == node

    # A rejected (Failed) pod has nothing to stop: it goes at once, like an unbound one.
    core.delete_namespaced_pod(f"early-{run}", NAMESPACE)
    assert _phase(core, f"early-{run}") is None
    core.delete_namespaced_pod(f"later-{run}", NAMESPACE, grace_period_seconds=0)


@pytest.mark.parametrize("sent_as", ["query", "body"])
def test_a_grace_period_of_zero_deletes_at_once(core: client.CoreV1Api, sent_as: str):
    name = f"now-{sent_as}-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(NAMESPACE, _pod(name, 1, gpu_type="t4"))
    _running(core, name)
    if sent_as == "query":
        core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
    else:
        core.delete_namespaced_pod(
            name, NAMESPACE, body=client.V1DeleteOptions(grace_period_seconds=0)
        )
    assert _phase(core, name) is None


def test_a_requested_grace_period_replaces_the_pods_own(core: client.CoreV1Api):
    name = f"short-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(NAMESPACE, _pod(name, 1, gpu_type="t4"))
    _running(core, name)
    answered = core.delete_namespaced_pod(
        name, NAMESPACE, body=client.V1DeleteOptions(grace_period_seconds=3)
    )
    assert answered.metadata.deletion_grace_period_seconds == 3
    _gone(core, name)


def test_an_unbound_pod_is_deleted_at_once(core: client.CoreV1Api):
    name = f"unbound-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(NAMESPACE, _pod(name, 1, gpu_type="no-such-type"))
    wait_for(
        lambda: core.read_namespaced_pod(name, NAMESPACE).status.conditions,
        message="unschedulable",
    )
    core.delete_namespaced_pod(name, NAMESPACE)
    assert _phase(core, name) is None


def test_delete_collection_is_graceful_and_a_terminating_pod_keeps_its_spec(
    core: client.CoreV1Api,
):
    run = uuid.uuid4().hex[:6]
    names = [f"coll-{run}-{index}" for index in range(2)]
    for name in names:
        core.create_namespaced_pod(NAMESPACE, _pod(name, 1, gpu_type="t4", labels={"run": run}))
    for name in names:
        _running(core, name)

    core.delete_collection_namespaced_pod(NAMESPACE, label_selector=f"run={run}")
    terminating = core.list_namespaced_pod(NAMESPACE, label_selector=f"run={run}").items
    assert sorted(p.metadata.name for p in terminating) == names
    assert all(p.metadata.deletion_timestamp for p in terminating)
    assert {p.status.phase for p in terminating} == {"Running"}

    # A second delete changes nothing; metadata may change, the spec may not.
    first = terminating[0]
    again = core.delete_namespaced_pod(first.metadata.name, NAMESPACE)
    assert again.metadata.resource_version == first.metadata.resource_version
    assert again.metadata.deletion_timestamp == first.metadata.deletion_timestamp
    labelled = core.patch_namespaced_pod(
        first.metadata.name, NAMESPACE, {"metadata": {"labels": {"seen": "yes"}}}
    )
    assert labelled.metadata.deletion_timestamp == first.metadata.deletion_timestamp
    with pytest.raises(ApiException) as refused:
        core.patch_namespaced_pod(
            first.metadata.name, NAMESPACE, {"spec": {"activeDeadlineSeconds": 5}}
        )
    assert refused.value.status == 422

    wait_for(
        lambda: not core.list_namespaced_pod(NAMESPACE, label_selector=f"run={run}").items,
        message="the collection deleted",
    )


def test_config_maps_are_still_deleted_at_once(core: client.CoreV1Api):
    name = f"cm-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": name}})
    core.delete_namespaced_config_map(name, NAMESPACE)
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map(name, NAMESPACE)
    assert missing.value.status == 404


def test_injected_delete_and_patch_failures_answer_500_once_then_succeed(
    core: client.CoreV1Api, faults: Faults
):
    name = f"flaky-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": name}})
    faults.fail_next("patch", "configmaps")
    faults.fail_next("delete", "configmaps")
    with pytest.raises(ApiException) as patch_failed:
        core.patch_namespaced_config_map(name, NAMESPACE, {"data": {"a": "b"}})
    assert patch_failed.value.status == 500
    assert core.read_namespaced_config_map(name, NAMESPACE).data is None  # nothing written
    assert core.patch_namespaced_config_map(name, NAMESPACE, {"data": {"a": "b"}}).data == {
        "a": "b"
    }
    with pytest.raises(ApiException) as delete_failed:
        core.delete_namespaced_config_map(name, NAMESPACE)
    assert delete_failed.value.status == 500
    assert core.read_namespaced_config_map(name, NAMESPACE)  # still there
    core.delete_namespaced_config_map(name, NAMESPACE)


def test_an_unknown_fault_verb_is_refused(faults: Faults):
    with pytest.raises(ValueError, match="unknown verb"):
        faults.fail_next("update", "pods")


def test_a_targeted_delay_times_out_a_client_with_a_short_request_timeout(
    core: client.CoreV1Api, faults: Faults
):
    faults.delay("list", "pods", 3.0)
    started = time.monotonic()
    with pytest.raises(HTTPError):
        core.list_namespaced_pod(NAMESPACE, _request_timeout=0.5)
    assert time.monotonic() - started < 3.0  # the client gave up; the server was still sleeping
    # Other verbs and resources answer at once.
    core.list_namespaced_config_map(NAMESPACE, _request_timeout=0.5)
    core.read_namespace(NAMESPACE, _request_timeout=0.5)
