"""The DCGM exporter's Prometheus text, read (gpudev/utilisation/exporter.py), and its GPUs
mapped to reservations through the pods it names."""

from __future__ import annotations

from gpudev.cluster.vocabulary import Node
from gpudev.utilisation.exporter import (
    parse_metrics,
    readings_by_reservation,
    scrape_gpu_nodes,
)

# Real exporter lines are long: one per GPU and metric, with every label.
TEXT = """\
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",container="dev",namespace="gpu-dev",pod="gpu-dev-abc-0"} 87
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",container="",namespace="",pod=""} 0
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a",device="nvidia0",Hostname="n1",container="dev",namespace="gpu-dev",pod="gpu-dev-abc-0"} 40960
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-b",device="nvidia1",Hostname="n1"} 0
DCGM_FI_DEV_SM_CLOCK{gpu="0"} 1980
not a sample at all
DCGM_FI_DEV_GPU_UTIL{gpu="2"} NaN
"""  # noqa: E501


def test_util_and_memory_per_gpu_with_the_pod_using_it():
    first, second = parse_metrics("n1", TEXT)
    assert (first.key, first.namespace, first.pod) == ("n1/0", "gpu-dev", "gpu-dev-abc-0")
    assert (first.util_percent, first.memory_used_mib) == (87.0, 40960.0)
    assert (second.key, second.pod, second.util_percent) == ("n1/1", None, 0.0)


def test_readings_map_to_reservations_by_namespace_and_pod():
    readings = parse_metrics("n1", TEXT)
    mapped = readings_by_reservation(readings, {("gpu-dev", "gpu-dev-abc-0"): "r1"})
    assert [r.key for r in mapped["r1"]] == ["n1/0"]
    assert readings_by_reservation(readings, {("other", "gpu-dev-abc-0"): "r1"}) == {}


def test_a_node_whose_exporter_fails_is_named_not_guessed_idle():
    nodes = [
        Node("n1", "h100", True, False, 8, internal_ip="10.0.0.1"),
        Node("n2", "h100", True, False, 8, internal_ip="10.0.0.2"),
        Node("cpu", None, True, False, 0, internal_ip="10.0.0.3"),
    ]
    asked = []

    def fetch(url: str, timeout: float) -> str:
        asked.append(url)
        if "10.0.0.2" in url:
            raise OSError("connection refused")
        return TEXT

    scrape = scrape_gpu_nodes(nodes, "http://{node_ip}:9400/metrics", 1.0, fetch)
    assert sorted(asked) == ["http://10.0.0.1:9400/metrics", "http://10.0.0.2:9400/metrics"]
    assert scrape.nodes_answered == {"n1"} and scrape.nodes_failed == {"n2"}
    assert {r.node for r in scrape.readings} == {"n1"}
