"""What a starting reservation's pods show has happened, as timeline entries (issue #32):
scheduling, disk attach, image pull, readiness, each under a key that makes it once."""

from __future__ import annotations

from typing import Any

from gpudev.cluster.pod_timeline import pod_entries

IMAGE = "dev:1"


def _pod(
    *,
    node: str | None = "node-a",
    claim: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    containers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "initContainers": [{"name": "jupyter-check", "image": IMAGE}],
        "containers": [{"name": "gpu-dev", "image": IMAGE}],
    }
    if node:
        spec["nodeName"] = node
    if claim:
        spec["volumes"] = [{"name": "home", "persistentVolumeClaim": {"claimName": claim}}]
    status: dict[str, Any] = {"phase": "Pending", "conditions": conditions or []}
    if init is not None:
        status["initContainerStatuses"] = init
    if containers is not None:
        status["containerStatuses"] = containers
    return {"metadata": {"name": "gpu-dev-1"}, "spec": spec, "status": status}


def _waiting(name: str, reason: str, message: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "image": IMAGE,
        "state": {"waiting": {"reason": reason, "message": message}},
    }


def _running(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": IMAGE,
        "imageID": f"docker-pullable://{IMAGE}",
        "state": {"running": {"startedAt": "2026-11-27T08:00:00Z"}},
    }


def _said(
    pod: dict[str, Any], events: list[dict[str, Any]] | None = None
) -> list[tuple[str, str, str]]:
    return [(e.kind, e.key, e.detail) for e in pod_entries([pod], events or [])]


def test_an_unschedulable_pod_records_the_schedulers_words_once_per_answer():
    pod = _pod(
        node=None,
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
            }
        ],
    )
    assert _said(pod) == [
        (
            "scheduling",
            "unschedulable:gpu-dev-1:0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
            "pod gpu-dev-1 waits for a node: 0/2 nodes are available: 2 Insufficient "
            "nvidia.com/gpu.",
        )
    ]


def test_a_bound_pod_without_a_disk_is_scheduled_and_pulling():
    assert _said(_pod(containers=[_waiting("gpu-dev", "ContainerCreating")])) == [
        ("scheduling", "scheduled:gpu-dev-1", "pod gpu-dev-1 scheduled on node node-a"),
        ("image", f"pulling:gpu-dev-1:{IMAGE}", f"pulling image {IMAGE} for pod gpu-dev-1"),
    ]


def test_a_pod_with_a_disk_says_the_attach_and_not_a_pull_it_cannot_see_yet():
    kinds = _said(_pod(claim="work", containers=[_waiting("gpu-dev", "ContainerCreating")]))
    assert [(k, key) for k, key, _ in kinds] == [
        ("scheduling", "scheduled:gpu-dev-1"),
        ("disk", "attaching:gpu-dev-1"),
    ]


def test_a_started_container_shows_the_disk_attached_and_the_image_pulled_once():
    pod = _pod(
        claim="work",
        conditions=[{"type": "Ready", "status": "True"}],
        init=[{**_running("jupyter-check"), "state": {"terminated": {"exitCode": 0}}}],
        containers=[_running("gpu-dev")],
    )
    assert [key for _, key, _ in _said(pod)] == [
        "scheduled:gpu-dev-1",
        "attaching:gpu-dev-1",
        "attached:gpu-dev-1",
        f"pulling:gpu-dev-1:{IMAGE}",
        f"pulled:gpu-dev-1:{IMAGE}",  # the init container's and the dev container's image
        "ready:gpu-dev-1",
    ]
    assert _said(pod)[-1][2] == "pod gpu-dev-1 ready: sshd answers"


def test_a_pull_error_is_recorded_with_the_kubelets_reason_and_message():
    message = 'Back-off pulling image "dev:1"'
    said = _said(_pod(init=[_waiting("jupyter-check", "ImagePullBackOff", message)]))
    assert said[-1] == (
        "image",
        f"pull_error:gpu-dev-1:{IMAGE}",
        f"pull error for pod gpu-dev-1: ImagePullBackOff: {message}",
    )
    # ErrImagePull first, then ImagePullBackOff: the same key, so the first one stays.
    first = _said(_pod(init=[_waiting("jupyter-check", "ErrImagePull", "not found")]))
    assert first[-1][1] == said[-1][1]


def test_an_attach_failure_event_is_recorded_for_the_pod_it_is_about():
    events = [
        {
            "type": "Warning",
            "reason": "FailedAttachVolume",
            "message": "AttachVolume.Attach failed for volume pv-1: IncorrectState",
            "involvedObject": {"name": "gpu-dev-1"},
        },
        {
            "type": "Warning",
            "reason": "FailedAttachVolume",
            "message": "another pod's",
            "involvedObject": {"name": "gpu-dev-2"},
        },
    ]
    said = _said(_pod(claim="work", containers=[_waiting("gpu-dev", "ContainerCreating")]), events)
    assert ("disk", "attach_failed:gpu-dev-1:FailedAttachVolume") in [
        (k, key) for k, key, _ in said
    ]
    assert not any("another pod's" in detail for _, _, detail in said)
    assert not any(key.startswith("attaching:") for _, key, _ in said)


def test_long_messages_are_cut():
    pod = _pod(init=[_waiting("jupyter-check", "ErrImagePull", "x" * 5000)])
    assert len(_said(pod)[-1][2]) < 400
