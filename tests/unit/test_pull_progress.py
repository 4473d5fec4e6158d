"""The readiness check's status line while the image pulls (gpudev/cluster/pod_readiness.py):
`pulling image X (n s)`, counted from the pod's `startTime` (the kubelet's first sync of the
pod, before the pull), so a long cold pull shows it is moving; nothing counted without one."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from gpudev.cluster.pod_readiness import pods_state


def _pulling(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "gpu-dev-1"},
        "spec": {"nodeName": "gpu-1", "containers": [{"name": "gpu-dev", "image": "dev:1"}]},
        "status": {
            "phase": "Pending",
            "containerStatuses": [
                {"name": "gpu-dev", "state": {"waiting": {"reason": "ContainerCreating"}}}
            ],
            **status,
        },
    }


def test_a_pull_says_how_long_the_pod_has_waited_for_it():
    an_hour_ago = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    problem = pods_state([_pulling(startTime=an_hour_ago)], 1).problem
    assert problem is not None
    found = re.fullmatch(r"pulling image dev:1 \((\d+) s\)", problem)
    assert found is not None and int(found[1]) >= 3600


def test_without_a_start_time_or_with_one_that_does_not_parse_nothing_is_counted():
    assert pods_state([_pulling()], 1).problem == "pulling image dev:1"
    assert pods_state([_pulling(startTime="yesterday")], 1).problem == "pulling image dev:1"
