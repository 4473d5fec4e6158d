"""Pod health, watched (gpudev/availability/health.py): one run's node and pod lists and the
active reservations → what to record, and which reservations must end and why. Also the
inventory's reading of a pod's status as a kubelet writes it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from gpudev.availability.health import plan_pod_health
from gpudev.cluster.inventory import _pod
from gpudev.cluster.vocabulary import Node, Pod
from gpudev.models import WatchedReservation

LISTED = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
RID = uuid.UUID("11111111-2222-3333-4444-555555555555")
NODE = Node("gpu-1", "h100", ready=True, unschedulable=False, allocatable_gpus=8)


def watched(**fields: Any) -> WatchedReservation:
    row: dict[str, Any] = {
        "reservation_id": RID,
        "total_nodes": 1,
        "launched_at": LISTED - timedelta(minutes=5),
        "task_token": "token",
        "pod_restarts": 0,
        "oom_count": 0,
        "last_oom_at": None,
        "health_warning": None,
        "health_ending": None,
    }
    return WatchedReservation(**{**row, **fields})


def pod(**fields: Any) -> Pod:
    row: dict[str, Any] = {
        "name": "gpu-dev-11111111-0",
        "node_name": "gpu-1",
        "phase": "Running",
        "gpu_requests": 8,
        "reservation_id": str(RID),
    }
    return Pod(**{**row, **fields})


def test_a_healthy_pod_changes_nothing():
    assert plan_pod_health([watched()], [NODE], [pod()], LISTED) == []


def test_an_oom_kill_is_counted_once_with_its_time():
    killed = LISTED - timedelta(seconds=30)
    [finding] = plan_pod_health([watched()], [NODE], [pod(restarts=1, last_oom_at=killed)], LISTED)
    assert (finding.new_ooms, finding.last_oom_at, finding.pod_restarts) == (1, killed, 1)
    assert finding.health_warning is not None and "OOM-killed 1 time(s)" in finding.health_warning
    assert finding.health_ending is None
    # The next run sees the same status: recorded already, nothing new.
    after = watched(
        pod_restarts=1, oom_count=1, last_oom_at=killed, health_warning=finding.health_warning
    )
    assert plan_pod_health([after], [NODE], [pod(restarts=1, last_oom_at=killed)], LISTED) == []
    # A second kill raises the restart count again.
    again = killed + timedelta(seconds=20)
    [second] = plan_pod_health([after], [NODE], [pod(restarts=2, last_oom_at=again)], LISTED)
    assert (second.new_ooms, second.last_oom_at) == (1, again)
    assert second.health_warning is not None and "OOM-killed 2 time(s)" in second.health_warning


def test_a_crash_loop_is_a_warning_not_an_ending():
    [finding] = plan_pod_health([watched()], [NODE], [pod(restarts=3, crash_looping=True)], LISTED)
    assert finding.new_ooms == 0 and finding.health_ending is None
    assert finding.health_warning == "pod gpu-dev-11111111-0 is crash-looping (CrashLoopBackOff)"


def test_a_pod_gone_evicted_deleted_or_without_its_node_ends_the_reservation():
    cases = {
        "1 of 1 pods gone (deleted outside gpu-dev)": ([NODE], []),
        "pod gpu-dev-11111111-0 evicted: The node was low on resource: memory.": (
            [NODE],
            [
                pod(
                    phase="Failed",
                    reason="Evicted",
                    message="The node was low on resource: memory.",
                )
            ],
        ),
        "pod gpu-dev-11111111-0 was deleted": ([NODE], [pod(terminating_until=1.0)]),
        "node gpu-1 of pod gpu-dev-11111111-0 is gone": ([], [pod()]),
    }
    for reason, (nodes, pods) in cases.items():
        [finding] = plan_pod_health([watched()], nodes, pods, LISTED)
        assert finding.health_ending == reason
        assert finding.health_warning is not None and finding.health_warning.startswith(reason)


def test_one_missing_pod_of_a_multinode_reservation_ends_it():
    [finding] = plan_pod_health([watched(total_nodes=2)], [NODE], [pod()], LISTED)
    assert finding.health_ending == "1 of 2 pods gone (deleted outside gpu-dev)"


def test_a_reservation_launched_after_the_list_waits_for_the_next_run():
    late = watched(launched_at=LISTED + timedelta(seconds=1))
    assert plan_pod_health([late], [NODE], [], LISTED) == []


def test_other_pods_and_other_reservations_are_not_confused():
    other = pod(name="someone-else", reservation_id=None, restarts=9, crash_looping=True)
    assert plan_pod_health([watched()], [NODE], [pod(), other], LISTED) == []


def listed_pod(status: dict[str, Any]) -> dict[str, Any]:
    """A pod of reservation RID on gpu-1 as the API server lists it, with this status."""
    return {
        "metadata": {"name": "p", "labels": {"gpu-dev/reservation": str(RID)}},
        "spec": {"nodeName": "gpu-1", "containers": [{"name": "dev"}]},
        "status": status,
    }


def test_the_inventory_reads_a_kubelet_status():
    item = listed_pod(
        {
            "phase": "Running",
            "containerStatuses": [
                {
                    "name": "dev",
                    "restartCount": 2,
                    "lastState": {
                        "terminated": {
                            "reason": "OOMKilled",
                            "exitCode": 137,
                            "finishedAt": "2026-11-23T11:59:00Z",
                        }
                    },
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                }
            ],
        }
    )
    read = _pod(item)
    assert read.restarts == 2 and read.crash_looping
    assert read.last_oom_at == datetime(2026, 11, 23, 11, 59, tzinfo=UTC)
    assert _pod({"metadata": {"name": "q"}, "status": {"phase": "Running"}}).last_oom_at is None


def test_an_init_container_in_crash_loop_back_off_reads_as_crash_looping():
    item = listed_pod(
        {
            "phase": "Pending",
            "initContainerStatuses": [
                {"name": "jupyter-check", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
            ],
            "containerStatuses": [
                {"name": "dev", "state": {"waiting": {"reason": "PodInitializing"}}}
            ],
        }
    )
    assert _pod(item).crash_looping
