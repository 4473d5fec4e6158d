"""The simulated DCGM exporter (localcloud/dcgm_exporter.py) speaks what the updater reads:
each GPU node's Prometheus text with one line per GPU and metric, the running pod holding a
GPU named on its lines; GPUs idle until `python -m localcloud.gpu_activity REF busy`; a node
without GPUs has no exporter. Read back with the control plane's own parser."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from gpudev.utilisation.exporter import parse_metrics
from localcloud import gpu_activity
from localcloud.stack import LocalCloud
from tests.support.waiting import wait_for

NAMESPACE = "gpu-dev"


def _pod(name: str, reservation: str, gpus: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"gpu-dev/reservation": reservation}},
        "spec": {
            "nodeSelector": {"GpuType": "h100"},
            "containers": [
                {
                    "name": "gpu-dev",
                    "image": "pytorch",
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
        },
    }


@pytest.fixture
def running_pod(core: Any) -> Any:
    reservation = str(uuid.uuid4())
    name = f"gpu-dev-{reservation[:8]}"
    core.create_namespaced_pod(NAMESPACE, _pod(name, reservation, 2))
    pod = wait_for(
        lambda: (p := core.read_namespaced_pod(name, NAMESPACE)).status.phase == "Running" and p,
        message=f"{name} running",
    )
    yield reservation, pod
    core.delete_namespaced_pod(name, NAMESPACE)


def _metrics(cloud: LocalCloud, node: str) -> str:
    url = f"{cloud.describe()['dcgm_exporter_url']}/nodes/{node}/metrics"
    with urllib.request.urlopen(url, timeout=5) as reply:
        assert reply.headers["Content-Type"].startswith("text/plain")
        return str(reply.read().decode())


def test_a_gpu_nodes_gpus_with_the_pod_holding_them_idle_then_busy(
    local_cloud: LocalCloud, running_pod: Any, tmp_path: Path
):
    reservation, pod = running_pod
    node = pod.spec.node_name
    readings = parse_metrics(node, _metrics(local_cloud, node))
    assert len(readings) == 8  # an h100 node's GPUs, held or not
    held = [r for r in readings if r.pod == pod.metadata.name]
    assert len(held) == 2 and {r.namespace for r in held} == {NAMESPACE}
    assert {r.util_percent for r in held} == {0.0}

    stack = tmp_path / "stack.json"
    stack.write_text(json.dumps(local_cloud.describe()))
    assert gpu_activity.main([reservation[:8], "busy", "--stack", str(stack)]) == 0
    held = [r for r in parse_metrics(node, _metrics(local_cloud, node)) if r.pod]
    assert all(60 <= r.util_percent <= 95 and r.memory_used_mib > 0 for r in held)
    assert gpu_activity.main([reservation, "idle", "--stack", str(stack)]) == 0
    held = [r for r in parse_metrics(node, _metrics(local_cloud, node)) if r.pod]
    assert {r.util_percent for r in held} == {0.0}


def test_no_exporter_on_a_node_without_gpus_nor_for_an_unknown_reservation(
    local_cloud: LocalCloud, core: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    cpu_node = core.list_node(label_selector="GpuType=cpu-x86").items[0].metadata.name
    with pytest.raises(urllib.error.HTTPError) as missing:
        _metrics(local_cloud, cpu_node)
    assert missing.value.code == 404
    stack = tmp_path / "stack.json"
    stack.write_text(json.dumps(local_cloud.describe()))
    assert gpu_activity.main(["0000dead", "busy", "--stack", str(stack)]) == 1
    assert "no reservation with pods matches '0000dead'" in capsys.readouterr().err
