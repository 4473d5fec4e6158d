"""The NVIDIA DCGM exporter's metrics, read: each GPU node's exporter answers
`GET /metrics` in the Prometheus text format, one line per GPU and metric, labelled with
the GPU (`gpu`, `UUID`) and, with its pod mapping on (`--kubernetes`), the pod using it
(`pod`, `namespace`). We read two metrics and nothing else:

- `DCGM_FI_DEV_GPU_UTIL`: percent of the last sample period a kernel ran on the GPU;
- `DCGM_FI_DEV_FB_USED`: the GPU's frame-buffer memory in use, in MiB.

Parsing is pure; fetching goes through an injected `fetch(url, timeout) -> text`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from gpudev.cluster.vocabulary import Node

UTIL = "DCGM_FI_DEV_GPU_UTIL"
MEMORY_USED = "DCGM_FI_DEV_FB_USED"
_LINE = re.compile(r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
SCRAPE_THREADS = 8

Fetch = Callable[[str, float], str]


@dataclass(frozen=True)
class GpuReading:
    """One GPU of one node as its exporter reported it; `pod` None: no pod holds it."""

    node: str
    gpu: str  # the exporter's `gpu` index
    namespace: str | None
    pod: str | None
    util_percent: float
    memory_used_mib: float

    @property
    def key(self) -> str:
        return f"{self.node}/{self.gpu}"


def parse_metrics(node: str, text: str) -> list[GpuReading]:
    """The GPUs of one exporter's answer that report utilisation; memory 0 when absent. A
    line that is not a sample (a comment, garbage) is skipped, as Prometheus would refuse
    only the scrape, and one bad GPU must not hide the others."""
    util: dict[str, float] = {}
    memory: dict[str, float] = {}
    owners: dict[str, tuple[str | None, str | None]] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if match is None or match["name"] not in (UTIL, MEMORY_USED):
            continue
        labels = dict(_LABEL.findall(match["labels"] or ""))
        gpu = labels.get("gpu")
        try:
            value = float(match["value"])
        except ValueError:
            continue
        if gpu is None or value != value:  # NaN
            continue
        (util if match["name"] == UTIL else memory)[gpu] = value
        if labels.get("pod"):
            owners[gpu] = (labels.get("namespace") or None, labels["pod"])
    return [
        GpuReading(
            node=node,
            gpu=gpu,
            namespace=owners.get(gpu, (None, None))[0],
            pod=owners.get(gpu, (None, None))[1],
            util_percent=min(100.0, max(0.0, value)),
            memory_used_mib=max(0.0, memory.get(gpu, 0.0)),
        )
        for gpu, value in sorted(util.items())
    ]


def exporter_url(template: str, node: Node) -> str | None:
    if "{node_ip}" in template and not node.internal_ip:
        return None
    return template.format(node_ip=node.internal_ip or "", node_name=node.name)


@dataclass(frozen=True)
class Scrape:
    readings: list[GpuReading]
    nodes_answered: frozenset[str]  # the nodes whose exporter answered
    nodes_failed: frozenset[str]


def scrape_gpu_nodes(nodes: Iterable[Node], template: str, timeout: float, fetch: Fetch) -> Scrape:
    """Every ready GPU node's exporter, a few at a time; a node that does not answer is
    named, never guessed idle."""
    targets = [
        (node.name, url)
        for node in nodes
        if node.allocatable_gpus > 0
        and node.ready
        and (url := exporter_url(template, node)) is not None
    ]

    def one(target: tuple[str, str]) -> tuple[str, list[GpuReading] | None]:
        name, url = target
        try:
            return name, parse_metrics(name, fetch(url, timeout))
        except Exception:  # unreachable, refused, timed out: judged by the next run
            return name, None

    readings: list[GpuReading] = []
    answered, failed = set(), set()
    if targets:
        with ThreadPoolExecutor(min(SCRAPE_THREADS, len(targets))) as pool:
            for name, got in pool.map(one, targets):
                if got is None:
                    failed.add(name)
                else:
                    answered.add(name)
                    readings += got
    return Scrape(readings, frozenset(answered), frozenset(failed))


def http_fetch(url: str, timeout: float) -> str:
    """The default `fetch`: a plain GET (the exporter serves HTTP inside the VPC)."""
    from urllib.request import urlopen

    with urlopen(url, timeout=timeout) as response:
        body: bytes = response.read(4 * 1024 * 1024)
    return body.decode("utf-8", "replace")


def readings_by_reservation(
    readings: Sequence[GpuReading], pod_reservations: dict[tuple[str | None, str], str]
) -> dict[str, list[GpuReading]]:
    """The readings of our pods' GPUs, by reservation id (the pod's label, from the
    updater's pod list); GPUs of other pods or of none are left out."""
    out: dict[str, list[GpuReading]] = {}
    for reading in readings:
        if reading.pod is None:
            continue
        reservation = pod_reservations.get((reading.namespace, reading.pod))
        if reservation is not None:
            out.setdefault(reservation, []).append(reading)
    return out
