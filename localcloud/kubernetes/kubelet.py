"""The simulated kubelets (one per node, run as one loop): each pod bound to a node (by the
scheduler or created with nodeName) is admitted after `kubelet_delay_seconds`
(`kubelet_admission.py`: enough free GPUs, else Failed), waits in ContainerCreating for its
volumes, pulls its images (`image_pulls.py`: ErrImagePull/ImagePullBackOff for one the registry
does not have, one in `missing_images`, or any while `image_pulls_fail`), runs its init
containers (`init_containers.py`), then runs, with container statuses (evicted past its
local storage limits, `local_storage.py`); a readiness probe
keeps it not Ready until it passes (`readiness.py`); a container that exits (its image in
`crashing_images` or shell-less) is restarted with a back-off by the restart policy
(`container_restarts.py`). Terminating pods are stopped and
deleted after their grace period (`pod_termination.py`)."""

from __future__ import annotations

import functools
import logging
import time
from typing import Any

from localcloud.kubernetes import (
    efa,
    init_containers,
    kubelet_admission,
    readiness,
)
from localcloud.kubernetes.container_logs import (
    ContainerLogs,
    dockerd_output,
    entrypoint_output,
    startup_output,
)
from localcloud.kubernetes.container_restarts import ContainerRestarts, Crash
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.image_pulls import TOO_MANY_REQUESTS, ImagePulls
from localcloud.kubernetes.init_container_restarts import InitContainerRestarts
from localcloud.kubernetes.kubelet_events import KubeletEvents, runs_begun
from localcloud.kubernetes.local_storage import LocalStorage
from localcloud.kubernetes.log_shipping import LogShipper
from localcloud.kubernetes.nodes import allocatable_gpus, fake_ip, gpu_request
from localcloud.kubernetes.pod_termination import PodTerminations
from localcloud.kubernetes.storage_simulation import (
    StorageSimulation,
    container_creating,
)
from localcloud.kubernetes.store import ObjectStore
from localcloud.kubernetes.timestamps import now

log = logging.getLogger("localcloud.cluster")
Obj = dict[str, Any]


class Kubelet:
    def __init__(
        self,
        store: ObjectStore,
        storage: StorageSimulation,
        probes: readiness.ReadinessProbes,
        terminations: PodTerminations,
        kubelet_delay_seconds: float,
        jupyter_images: frozenset[str],
        logs: ContainerLogs | None = None,
    ):
        self._store = store
        self._storage = storage
        self._probes = probes
        self._terminations = terminations
        self.kubelet_delay_seconds = kubelet_delay_seconds
        # The images whose PATH has jupyter-lab (init containers see it; init_containers.py).
        self.jupyter_images = jupyter_images
        # The init container scripts the stand-in runs (ours; tests may add their own).
        self.trusted_scripts = init_containers.SHIPPED_SCRIPTS
        # Images with no shell: a container's shell command cannot start in them.
        self.shell_less_images: frozenset[str] = frozenset()
        # Images whose containers exit at once, how (no runtime here: tests say why).
        self.crashing_images: dict[str, Crash] = {}
        self.init_restarts = InitContainerRestarts()  # failed init containers: back-off
        self.restarts = ContainerRestarts()  # containers that exited: back-off
        # What running pods wrote to local disk (tests say): past a limit, evicted.
        self.local_storage = LocalStorage()
        self._bound_seen_at: dict[str, float] = {}  # pod uid -> when the kubelet saw it bound
        self.events = KubeletEvents(store)  # Pulled, Created, Started, BackOff ...
        self.logs = logs or ContainerLogs()  # what the containers printed: pods/log
        # Pulls against the local registry (none here: at once; the local cloud sets one).
        self.image_pulls = ImagePulls(store, self._write)
        # Fluent Bit's DaemonSet: the same output into CloudWatch Logs (log_shipping.py);
        # None: not shipped (the local cloud sets it, with moto's client).
        self.log_shipper: LogShipper | None = None

    @property
    def image_pulls_fail(self) -> bool:
        """Fault injection: every pull refused (429 Too Many Requests), pods never start."""
        return self.image_pulls.refusing is not None

    @image_pulls_fail.setter
    def image_pulls_fail(self, fail: bool) -> None:
        self.image_pulls.refusing = TOO_MANY_REQUESTS if fail else None

    @property
    def missing_images(self) -> frozenset[str]:
        """Images neither the registry nor any node has: pulls fail as not found."""
        return self.image_pulls.missing

    @missing_images.setter
    def missing_images(self, images: frozenset[str]) -> None:
        self.image_pulls.missing = frozenset(images)

    def step(self) -> None:
        pods = sorted(
            self._store.list("pods", None, frozen=True)["items"],
            key=lambda p: p["metadata"]["creationTimestamp"],
        )
        uids = {p["metadata"]["uid"] for p in pods}
        for uid in self._bound_seen_at.keys() - uids:
            del self._bound_seen_at[uid]
        self.init_restarts.forget_pods_but(uids)
        self.restarts.forget_pods_but(uids)
        self.local_storage.forget_pods_but(uids)
        self._storage.forget_pods_but(uids)
        self.logs.forget_pods_but(uids)
        self.image_pulls.forget_pods_but(uids)
        self._terminations.step(pods)
        self._probes.step(pods)
        nodes = {
            n["metadata"]["name"]: n for n in self._store.list("nodes", None, frozen=True)["items"]
        }
        allocatable = {name: allocatable_gpus(n) for name, n in nodes.items()}
        self.events.forget_nodes_but(set(nodes))
        used = kubelet_admission.gpus_of_admitted_pods(pods)
        efa_used = efa.efa_in_use(pods, kubelet_admission.admitted)
        for pod in pods:
            node = pod["spec"].get("nodeName")
            meta = pod["metadata"]
            if not node or node not in allocatable or meta.get("deletionTimestamp"):
                continue  # no kubelet there to run it; deleted: PodTerminations
            if pod["status"].get("phase") == "Running":
                self._run(pod)
                continue
            if pod["status"].get("phase") != "Pending":
                continue
            seen = self._bound_seen_at.setdefault(meta["uid"], time.monotonic())
            if time.monotonic() - seen < self.kubelet_delay_seconds:
                continue
            if not kubelet_admission.admitted(pod):
                failure = kubelet_admission.predicate_failure(nodes[node], pod)
                if failure is not None:
                    self._refuse(pod, *failure)
                    continue
                wanted = gpu_request(pod)
                if used.get(node, 0) + wanted > allocatable[node]:
                    self._reject(pod, wanted, used.get(node, 0), allocatable[node])
                    continue
                efa_wanted, efa_held = efa.efa_request(pod), efa_used.get(node, 0)
                if efa_wanted and efa_held + efa_wanted > efa.allocatable_efa(nodes[node]):
                    capacity = efa.allocatable_efa(nodes[node])
                    self._refuse(pod, *efa.kubelet_rejection(efa_wanted, efa_held, capacity))
                    continue
                efa_used[node] = efa_held + efa_wanted
                used[node] = used.get(node, 0) + wanted
            if self._storage.waiting_for_volumes(pod, nodes[node]):  # ContainerCreating
                if not pod["status"].get("containerStatuses"):
                    self._write(pod, container_creating)
                continue
            if not self.image_pulls.ready(pod, node):  # image_pulls.py
                continue
            if pod["spec"].get("initContainers") and not init_containers.completed(pod):
                self._initialize(pod)
                continue
            if self._write(pod, functools.partial(_start_pod, node=node)):
                log.info("pod %s/%s running on %s", meta["namespace"], meta["name"], node)
            self._bound_seen_at.pop(meta["uid"], None)

    def _write(self, pod: Obj, change: Any) -> bool:
        """Change the pod in the store (and record the events the change shows); False if
        it went meanwhile."""
        meta = pod["metadata"]
        try:
            written = self._store.update("pods", meta["namespace"], meta["name"], change)
        except ApiError:
            return False
        self.events.after_write(pod, written)
        self._log_runs(pod, written)
        return True

    def _log_runs(self, before: Obj, after: Obj) -> None:
        """The output of the container runs a write began (an init container's is its
        script's, kept when it ends: `_initialize`)."""
        for at, container, status in runs_begun(before, after):
            if not at.startswith("spec.containers"):
                continue
            state = status.get("state") or {}
            started = (state.get("running") or state.get("terminated") or {}).get("startedAt")
            at = started or now()
            self._keep_output(after, status, at, self._output(container, state, at))

    def _keep_output(self, pod: Obj, status: Obj, at: str, text: str) -> None:
        """A container run's output: kept for pods/log, and shipped as Fluent Bit would."""
        name, run = status["name"], status.get("restartCount", 0)
        self.logs.write(pod["metadata"]["uid"], name, run, at, text)
        if self.log_shipper is not None:
            container_id = str(status.get("containerID") or "").rpartition("/")[2]
            self.log_shipper.ship(pod, name, container_id, at, text)

    def _output(self, container: Obj, state: Obj, at: str) -> str:
        """What a container run prints, as far as the stand-in knows."""
        if (state.get("terminated") or {}).get("reason") == "StartError":
            return ""
        image = container.get("image", "")
        crash = self.crashing_images.get(image)
        if crash is not None:
            return crash.log
        argv = [*(container.get("command") or []), *(container.get("args") or [])]
        if image in self.shell_less_images and init_containers.shell_of(argv):
            return ""  # it cannot start (StartError as the kubelet next sees it)
        if not argv:  # the image's own entrypoint (reserve --preserve-entrypoint)
            return entrypoint_output(container)
        if argv[:1] == ["dockerd"]:  # reserve --docker's sidecar
            return dockerd_output(container)
        return "\n".join(startup_output(container, at))

    def _run(self, pod: Obj) -> None:
        """One step of a running pod's containers: past a local storage limit the pod is
        evicted (`local_storage.py`); else those that exit, and their restarts."""
        eviction = self.local_storage.eviction(pod)
        if eviction is not None:
            meta = pod["metadata"]
            if self._write(pod, eviction):
                log.info("pod %s/%s evicted: local storage", meta["namespace"], meta["name"])
            return
        change = self.restarts.change(pod, self.crashing_images, self.shell_less_images)
        if change is not None:
            self._write(pod, change)

    def _initialize(self, pod: Obj) -> None:
        """One step of a pod's init containers: start them (one kubelet pass: the pod is seen
        Pending, initializing), then run them and record how they ended (the next pass starts
        the containers). A failed one is restarted after a back-off, or fails the pod
        (`init_container_restarts.py`)."""
        if not init_containers.started(pod):
            self._write(pod, functools.partial(_initializing, node=pod["spec"]["nodeName"]))
        elif init_containers.failed(pod):
            self._write(pod, self.init_restarts.after_failure(pod))
        elif init_containers.backing_off(pod):
            restart = self.init_restarts.restart_due(pod)
            if restart is not None:
                self._write(pod, restart)
        else:
            first = init_containers.first_pending(pod)
            outcomes = init_containers.run_all(
                pod, self.jupyter_images, self.trusted_scripts, self.shell_less_images
            )
            change = functools.partial(init_containers.record, outcomes=outcomes)
            if self._write(pod, change):
                ran = pod["spec"]["initContainers"][first : first + len(outcomes)]
                statuses = {s["name"]: s for s in pod["status"].get("initContainerStatuses") or []}
                for container, outcome in zip(ran, outcomes, strict=True):
                    status = statuses.get(container["name"]) or {"name": container["name"]}
                    self._keep_output(pod, status, outcome.started_at, outcome.log)

    def _refuse(self, pod: Obj, reason: str, message: str) -> None:
        meta = pod["metadata"]
        change = functools.partial(kubelet_admission.reject, message=message, reason=reason)
        if self._write(pod, change):
            log.info("pod %s/%s rejected: %s", meta["namespace"], meta["name"], message)
        self._bound_seen_at.pop(meta["uid"], None)

    def _reject(self, pod: Obj, wanted: int, used: int, capacity: int) -> None:
        meta = pod["metadata"]
        message = kubelet_admission.rejection_message(wanted, used, capacity)
        if self._write(pod, functools.partial(kubelet_admission.reject, message=message)):
            log.info("pod %s/%s rejected: %s", meta["namespace"], meta["name"], message)
        self._bound_seen_at.pop(meta["uid"], None)


def _start_pod(pod: Obj, node: str) -> None:
    started = now()
    sandbox_addresses(pod, node)
    pod["status"].update(
        phase="Running",
        startTime=started,
        conditions=[
            {"type": t, "status": "True", "lastTransitionTime": started}
            for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
        ],
        containerStatuses=[
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "ready": True,
                "restartCount": 0,
                "imageID": f"docker-pullable://{c.get('image', '')}",
                "containerID": f"containerd://{pod['metadata']['uid']}-{c['name']}",
                "started": True,
                "state": {"running": {"startedAt": started}},
            }
            for c in pod["spec"].get("containers", [])
        ],
    )
    readiness.not_ready_yet(pod)


def sandbox_addresses(pod: Obj, node: str) -> None:
    """The node's and the pod's IP, as the kubelet reports them once the pod's sandbox
    runs: `hostIP`/`podIP` and, as kube-apiserver shows them beside, `hostIPs`/`podIPs`."""
    host, own = fake_ip(node), fake_ip(pod["metadata"]["name"])
    pod["status"].update(hostIP=host, hostIPs=[{"ip": host}], podIP=own, podIPs=[{"ip": own}])


def _initializing(pod: Obj, node: str) -> None:
    init_containers.initializing(pod)
    sandbox_addresses(pod, node)
