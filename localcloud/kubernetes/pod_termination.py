"""The kubelet's half of a graceful deletion: a Terminating pod keeps running (and holding
its GPUs) for its grace period times `termination_seconds_scale`; then the kubelet stops
its containers (a status write: each running one terminated, exit 137, with the termination
message a preStop exec hook left; each one not running, e.g. waiting in CrashLoopBackOff,
terminated as ContainerStatusUnknown, as the kubelet's TerminatePod writes it) and deletes
the pod with grace 0 and its UID as precondition."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from localcloud.kubernetes import kubelet_events
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.kubelet_admission import admitted
from localcloud.kubernetes.pod_deletion import DeleteOptions
from localcloud.kubernetes.storage_simulation import StorageSimulation
from localcloud.kubernetes.store import ObjectStore
from localcloud.kubernetes.timestamps import now

log = logging.getLogger("localcloud.cluster")
Obj = dict[str, Any]
MAX_TERMINATION_MESSAGE = 4096  # bytes of a termination message the kubelet keeps (the tail)
# What the kubelet's TerminatePod writes for a container of a deleted pod that had not
# terminated and that it could not stop (not running: waiting, e.g. in CrashLoopBackOff).
STATUS_UNKNOWN = {
    "exitCode": 137,
    "reason": "ContainerStatusUnknown",
    "message": "The container could not be located when the pod was terminated",
}


class PodTerminations:
    def __init__(
        self, store: ObjectStore, storage: StorageSimulation, termination_seconds_scale: float
    ):
        self._store = store
        self._storage = storage
        self.termination_seconds_scale = termination_seconds_scale  # real s per grace s
        self._since: dict[str, float] = {}  # pod uid -> when the kubelet saw the deletion

    def step(self, pods: list[Obj]) -> None:
        """Stop and delete each Terminating pod whose time is up. Our pods' PID 1 (`bash
        -c`) ignores SIGTERM, so stopping takes the whole grace period (times
        `termination_seconds_scale`); a pod whose containers never started goes at once."""
        moment = time.monotonic()
        for uid in self._since.keys() - {p["metadata"]["uid"] for p in pods}:
            del self._since[uid]
        for pod in pods:
            meta = pod["metadata"]
            if not meta.get("deletionTimestamp"):
                continue
            if meta["uid"] not in self._since and admitted(pod):
                kubelet_events.killing(self._store, pod)  # the grace period begins
            since = self._since.setdefault(meta["uid"], moment)
            grace = (meta.get("deletionGracePeriodSeconds") or 0) * self.termination_seconds_scale
            if admitted(pod):
                if moment - since < grace:
                    continue
                self._stop_containers(pod)
            with contextlib.suppress(ApiError):  # gone already, or a new pod of that name
                self._store.delete(
                    "pods", meta["namespace"], meta["name"], DeleteOptions(0, meta["uid"])
                )
                log.info("pod %s/%s stopped and deleted", meta["namespace"], meta["name"])

    def _stop_containers(self, pod: Obj) -> None:
        """The kubelet's status write as the containers stop, before its final delete: each
        container terminated (SIGKILL after the grace period: exit 137), with the
        termination message a preStop exec hook left (the listing of its volumes, the
        stand-in having no filesystem), of which the kubelet keeps the last 4096 bytes.
        A container not running (waiting: its preStop hook never runs) is terminated as
        ContainerStatusUnknown, exit 137, with the kubelet's words as its message; one
        already terminated is left as it is. A finalizer keeps the pod, with this status,
        after the final delete."""
        meta = pod["metadata"]
        listing = (  # the last 4096 bytes, not characters, as the kubelet keeps
            self._storage.listing_for(pod)
            .encode()[-MAX_TERMINATION_MESSAGE:]
            .decode(errors="replace")
        )
        hooked = {
            c["name"]
            for c in pod["spec"].get("containers", [])
            if ((c.get("lifecycle") or {}).get("preStop") or {}).get("exec")
        }

        def stop(obj: Obj) -> None:
            finished = now()
            for status in obj["status"].get("containerStatuses") or []:
                state = status.get("state") or {}
                if "terminated" in state:
                    continue
                running = state.get("running")
                if running is None:
                    unknown = {"terminated": dict(STATUS_UNKNOWN)}
                    status.update(ready=False, started=False, state=unknown)
                    continue
                terminated = {
                    "exitCode": 137,
                    "reason": "Error",
                    "startedAt": running.get("startedAt"),
                    "finishedAt": finished,
                    "containerID": status.get("containerID"),
                }
                if status["name"] in hooked:
                    terminated["message"] = listing
                status.update(ready=False, started=False, state={"terminated": terminated})
            obj["status"]["phase"] = "Failed"  # the kubelet's terminal phase before deleting
            for condition in obj["status"].get("conditions") or []:
                if condition["type"] in ("ContainersReady", "Ready"):
                    condition.update(status="False", reason="PodFailed")  # generate.go

        with contextlib.suppress(ApiError):
            self._store.update("pods", meta["namespace"], meta["name"], stop)
