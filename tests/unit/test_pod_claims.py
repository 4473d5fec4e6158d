"""Each of a pod's claims said by what it is (issue #34 review): the named disk by its
name, the personal share's claim as `personal share /shared-personal`, in the readiness
check's status and in the timeline, on rank 0 (both claims) and the other ranks (the
share only)."""

from __future__ import annotations

from typing import Any

from gpudev.cluster import shared_files
from gpudev.cluster.pod_readiness import pods_state
from gpudev.cluster.pod_timeline import pod_entries

SHARE_CLAIM = "gpu-dev-0b5e1c7a-shared"
WAITING = [{"name": "gpu-dev", "state": {"waiting": {"reason": "ContainerCreating"}}}]


def _pod(name: str, *, home: str | None = None) -> dict[str, Any]:
    """A Pending pod on a node with the share's claim as the pod spec mounts it, and the
    home claim when it is rank 0 with a named disk."""
    container: dict[str, Any] = {"name": "gpu-dev", "image": "dev:1", "volumeMounts": []}
    container["env"] = []
    pod: dict[str, Any] = {
        "metadata": {"name": name, "uid": f"uid-{name}"},
        "spec": {"nodeName": "gpu-1", "containers": [container], "volumes": []},
        "status": {"phase": "Pending", "containerStatuses": WAITING},
    }
    if home:
        pod["spec"]["volumes"].append(
            {"name": "dev-home", "persistentVolumeClaim": {"claimName": home}}
        )
    shared_files.mount_in_pod(pod, SHARE_CLAIM, "20G")
    return pod


def _warning(pod: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": "Warning",
        "reason": reason,
        "message": message,
        "involvedObject": {"name": pod, "uid": f"uid-{pod}"},
        "lastTimestamp": "2026-11-27T22:00:00Z",
    }


EFS_FAILED = (
    f'MountVolume.SetUp failed for volume "{SHARE_CLAIM}" : rpc error: code = Internal '
    'desc = Could not mount "fs-1:/": mount failed: Failed to resolve "fs-1.efs.amazonaws.com"'
)


def _texts(entries: list[Any]) -> list[str]:
    return [e.detail for e in entries]


def test_a_rank_one_pod_says_it_mounts_the_personal_share_not_the_named_disk():
    rank1 = _pod("gpu-dev-1")
    assert pods_state([rank1], 1, disk="work").problem == (
        "mounting personal share /shared-personal"
    )
    said = _texts(pod_entries([rank1], (), "work"))
    assert "mounting personal share /shared-personal in pod gpu-dev-1" in said
    assert not any("work" in s or SHARE_CLAIM in s for s in said)


def test_without_a_named_disk_the_shares_claim_name_is_never_shown():
    pod = _pod("gpu-dev-0")
    assert SHARE_CLAIM not in str(pods_state([pod], 1).problem)
    assert not any(SHARE_CLAIM in s for s in _texts(pod_entries([pod])))


def test_rank_zero_says_both_the_disk_and_the_share():
    rank0 = _pod("gpu-dev-0", home="gpu-dev-r1-home")
    assert pods_state([rank0], 1, disk="work").problem == (
        "attaching disk work and mounting personal share /shared-personal"
    )
    said = _texts(pod_entries([rank0], (), "work"))
    assert "attaching disk work to pod gpu-dev-0" in said
    assert "mounting personal share /shared-personal in pod gpu-dev-0" in said


def test_an_efs_failed_mount_is_the_shares_not_the_named_disks():
    rank0 = _pod("gpu-dev-0", home="gpu-dev-r1-home")
    events = [_warning("gpu-dev-0", "FailedMount", EFS_FAILED)]
    entries = pod_entries([rank0], events, "work")
    [failing] = [e for e in entries if "failing" in e.detail]
    assert failing.detail.startswith("personal share /shared-personal of pod gpu-dev-0 failing")
    assert failing.key == "attach_failed:gpu-dev-0:FailedMount:share"
    problem = str(pods_state([rank0], 1, events, "work").problem)
    assert problem.startswith("the personal share /shared-personal could not be mounted")
    assert "disk work" not in problem


def test_a_disks_failures_are_still_the_disks():
    rank0 = _pod("gpu-dev-0", home="gpu-dev-r1-home")
    events = [
        _warning("gpu-dev-0", "FailedAttachVolume", "AttachVolume.Attach failed: IncorrectState"),
        _warning(
            "gpu-dev-0",
            "FailedMount",
            "Unable to attach or mount volumes: unmounted volumes=[dev-home], "
            "unattached volumes=[dev-home shared-personal]: timed out waiting for the condition",
        ),
    ]
    failing = [e for e in pod_entries([rank0], events, "work") if "failing" in e.detail]
    assert [e.key for e in failing] == [
        "attach_failed:gpu-dev-0:FailedAttachVolume",
        "attach_failed:gpu-dev-0:FailedMount",
    ]
    assert all(e.detail.startswith("disk work of pod gpu-dev-0 failing") for e in failing)
    problem = str(pods_state([rank0], 1, events, "work").problem)
    assert problem.startswith("its disk's volume could not be attached")
