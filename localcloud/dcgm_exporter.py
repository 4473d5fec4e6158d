"""The NVIDIA DCGM exporter, simulated: what each GPU node's exporter DaemonSet pod answers
at `:9400/metrics` (deploy/kubernetes/monitoring/dcgm-exporter.yaml), served on loopback at
`/nodes/<node>/metrics` from the stand-in's own nodes and pods.

As the real exporter with its pod mapping on (`--kubernetes`): one line per GPU of the
node for `DCGM_FI_DEV_GPU_UTIL` (percent) and `DCGM_FI_DEV_FB_USED` (MiB), labelled `gpu`,
`UUID`, `device`, `modelName`, `Hostname`, and for a GPU a running pod holds, `container`,
`namespace` and `pod` (empty otherwise). A node without GPUs, or unknown, answers 404, as
no exporter runs there. The device plugin hands a node's GPUs out in order; the pods'
GPUs here are numbered by their creation, the same at every scrape.

Each reservation's GPUs are idle (0 %, a CUDA context's 512 MiB) until made busy:
`POST /activity` with `{"reservation": id or 8+ character prefix, "state": "busy"|"idle"}`
(`python -m localcloud.gpu_activity`); busy GPUs report 60-95 %.
"""

from __future__ import annotations

import json
import threading
import zlib
from typing import Any

from localcloud.http import HttpService, LocalHttpServer, RawRequest, Reply
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.store import ObjectStore

RESERVATION_LABEL = "gpu-dev/reservation"
GPU_RESOURCE = "nvidia.com/gpu"
IDLE_MEMORY_MIB = 512
BUSY_MEMORY_MIB = 30_720
STATES = ("busy", "idle")


class SimulatedDcgmExporter(HttpService):
    def __init__(self, store: ObjectStore, port: int = 0) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._busy: set[str] = set()  # reservation ids whose GPUs are in use
        self._server = LocalHttpServer(self._handle, "dcgm-exporter", port)

    def url_template(self) -> str:
        """The updater's DCGM_EXPORTER_URL for this stand-in."""
        return f"{self.url}/nodes/{{node_name}}/metrics"

    def set_activity(self, reference: str, state: str) -> str:
        """Mark a reservation's GPUs busy or idle; its full id. LookupError: no reservation
        with pods matches, or more than one does."""
        if state not in STATES:
            raise ValueError(f"state must be one of {', '.join(STATES)}")
        ids: set[str] = {
            str(pod["metadata"].get("labels", {}).get(RESERVATION_LABEL, ""))
            for pod in self._store.list("pods", None, frozen=True)["items"]
        } - {""}
        matches = sorted(
            i for i in ids if i == reference or (len(reference) >= 8 and i.startswith(reference))
        )
        if len(matches) != 1:
            found = "no reservation with pods" if not matches else "more than one reservation"
            raise LookupError(f"{found} matches {reference!r}")
        with self._lock:
            (self._busy.add if state == "busy" else self._busy.discard)(matches[0])
        return matches[0]

    def metrics(self, node_name: str) -> str | None:
        """The exporter's answer for a node, or None: no such GPU node."""
        try:
            node = self._store.get("nodes", "", node_name, frozen=True)
        except ApiError:  # 404: no such node
            return None
        gpus = int(str(node.get("status", {}).get("allocatable", {}).get(GPU_RESOURCE, "0")))
        if gpus <= 0:
            return None
        model = node["metadata"].get("labels", {}).get("GpuType", "gpu")
        owners = self._owners(node_name, gpus)
        with self._lock:
            busy = set(self._busy)
        util_lines, memory_lines = [], []
        for index in range(gpus):
            pod = owners.get(index)
            labels = _labels(node_name, index, model, pod)
            reservation = (pod or {}).get("metadata", {}).get("labels", {}).get(RESERVATION_LABEL)
            in_use = reservation in busy
            util = 60 + zlib.crc32(f"{node_name}/{index}".encode()) % 36 if in_use else 0
            memory = BUSY_MEMORY_MIB if in_use else (IDLE_MEMORY_MIB if pod else 0)
            util_lines.append(f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} {util}")
            memory_lines.append(f"DCGM_FI_DEV_FB_USED{{{labels}}} {memory}")
        return "\n".join(
            [
                "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
                "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
                *util_lines,
                "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).",
                "# TYPE DCGM_FI_DEV_FB_USED gauge",
                *memory_lines,
                "",
            ]
        )

    def _owners(self, node_name: str, gpus: int) -> dict[int, dict[str, Any]]:
        """GPU index → the running pod holding it, the node's pods numbered by creation."""
        pods = self._store.list(
            "pods", None, field_selector=f"spec.nodeName={node_name}", frozen=True
        )["items"]
        holding = sorted(
            (p for p in pods if p.get("status", {}).get("phase") == "Running"),
            key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]),
        )
        owners: dict[int, dict[str, Any]] = {}
        index = 0
        for pod in holding:
            for _ in range(_gpu_requests(pod)):
                if index < gpus:
                    owners[index] = pod
                    index += 1
        return owners

    def _handle(self, request: RawRequest) -> Reply:
        path = request.raw_path.split("?", 1)[0]
        if request.method == "GET" and path.startswith("/nodes/") and path.endswith("/metrics"):
            text = self.metrics(path.removeprefix("/nodes/").removesuffix("/metrics"))
            if text is None:
                return 404, {"Content-Type": "text/plain"}, b"no exporter on this node\n"
            return 200, {"Content-Type": "text/plain; version=0.0.4"}, text.encode()
        if request.method == "POST" and path == "/activity":
            try:
                body = json.loads(request.body or b"{}")
                reservation = self.set_activity(str(body["reservation"]), str(body["state"]))
            except LookupError as error:
                return _json(404, {"message": str(error)})
            except (ValueError, TypeError) as error:
                return _json(400, {"message": f"bad request: {error}"})
            return _json(200, {"reservation": reservation, "state": body["state"]})
        return _json(404, {"message": "GET /nodes/<node>/metrics or POST /activity"})


def _gpu_requests(pod: dict[str, Any]) -> int:
    return sum(
        int(str((c.get("resources", {}).get("limits") or {}).get(GPU_RESOURCE, "0")))
        for c in pod.get("spec", {}).get("containers", [])
    )


def _labels(node: str, index: int, model: str, pod: dict[str, Any] | None) -> str:
    meta = (pod or {}).get("metadata", {})
    container = ((pod or {}).get("spec", {}).get("containers") or [{}])[0].get("name", "")
    uuid = f"GPU-{zlib.crc32(f'{node}/{index}'.encode()):08x}"
    return ",".join(
        f'{key}="{value}"'
        for key, value in (
            ("gpu", index),
            ("UUID", uuid),
            ("device", f"nvidia{index}"),
            ("modelName", model),
            ("Hostname", node),
            ("container", container if pod else ""),
            ("namespace", meta.get("namespace", "")),
            ("pod", meta.get("name", "")),
        )
    )


def _json(status: int, payload: dict[str, Any]) -> Reply:
    return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()
