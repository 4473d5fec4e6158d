"""The simulated scheduler: binds each Pending, unbound pod (oldest first) to a Ready,
schedulable node that satisfies nodeName, nodeSelector and required node affinity, whose
NoSchedule and NoExecute taints the pod tolerates, has the
GPUs it requests free (those of every bound, unfinished pod counted, Terminating ones
included) and suits its volumes (a `Scheduled` event); a pod that fits nowhere stays Pending
with a FailedScheduling-style `PodScheduled` condition and a `FailedScheduling` event."""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from localcloud.kubernetes import efa, events
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.nodes import (
    allocatable_gpus,
    gpu_request,
    node_accepts,
    node_is_ready,
    untolerated_taints,
)
from localcloud.kubernetes.scheduling_failure import scheduling_failure
from localcloud.kubernetes.storage_simulation import StorageSimulation
from localcloud.kubernetes.store import ObjectStore
from localcloud.kubernetes.timestamps import now

log = logging.getLogger("localcloud.cluster")
Obj = dict[str, Any]
TERMINAL = ("Succeeded", "Failed")
COMPONENT = "default-scheduler"


class Scheduler:
    def __init__(self, store: ObjectStore, storage: StorageSimulation):
        self._store = store
        self._storage = storage

    def schedule(self) -> None:
        pods = self._store.list("pods", None, frozen=True)["items"]
        nodes = self._store.list("nodes", None, frozen=True)["items"]
        used = _gpus_in_use(pods)
        efa_used = efa.efa_in_use(pods, lambda p: p["status"].get("phase") not in TERMINAL)
        for pod in sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"]):
            if pod["spec"].get("nodeName") or pod["status"].get("phase") != "Pending":
                continue
            wanted = gpu_request(pod)
            claim_problem = self._storage.unschedulable(pod)
            candidates = [
                n
                for n in nodes
                if not claim_problem
                and node_is_ready(n)
                and node_accepts(n, pod)
                and not untolerated_taints(n, pod, ("NoSchedule", "NoExecute"))
                and allocatable_gpus(n) - used.get(n["metadata"]["name"], 0) >= wanted
            ]
            efa_wanted = efa.efa_request(pod)
            short_of_efa = [
                n
                for n in candidates
                if efa.allocatable_efa(n) - efa_used.get(n["metadata"]["name"], 0) < efa_wanted
            ]
            candidates = [n for n in candidates if n not in short_of_efa]
            fits = [n for n in candidates if not self._storage.conflicts(pod, n)]
            meta = pod["metadata"]
            if not fits and short_of_efa and not candidates:
                self._unschedulable(pod, efa.scheduling_failure(len(nodes), len(short_of_efa)))
                continue
            if not fits:
                self._unschedulable(
                    pod, scheduling_failure(len(nodes), wanted, claim_problem, len(candidates))
                )
                continue
            node = fits[0]["metadata"]["name"]
            try:
                self._store.bind(meta["namespace"], meta["name"], node)
            except ApiError:
                continue  # deleted or bound meanwhile
            used[node] = used.get(node, 0) + wanted
            efa_used[node] = efa_used.get(node, 0) + efa_wanted
            message = f"Successfully assigned {meta['namespace']}/{meta['name']} to {node}"
            events.record(self._store, pod, "Normal", "Scheduled", message, COMPONENT)
            log.info("pod %s/%s bound to %s", meta["namespace"], meta["name"], node)

    def _unschedulable(self, pod: Obj, message: str) -> None:
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastTransitionTime": now(),
        }
        current = pod["status"].get("conditions") or []
        if current and current[0].get("message") == message:
            return

        def mark(obj: Obj) -> None:
            obj["status"]["conditions"] = [condition]

        meta = pod["metadata"]
        with contextlib.suppress(ApiError):  # deleted meanwhile: nothing to say
            self._store.update("pods", meta["namespace"], meta["name"], mark)
            events.record(self._store, pod, "Warning", "FailedScheduling", message, COMPONENT)


def _gpus_in_use(pods: list[Obj]) -> dict[str, int]:
    used: dict[str, int] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if node and pod["status"].get("phase") not in TERMINAL:
            used[node] = used.get(node, 0) + gpu_request(pod)
    return used
