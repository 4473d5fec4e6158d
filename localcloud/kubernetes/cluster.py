"""A simulated EKS cluster behind the stand-in.

- Nodes follow the Auto Scaling groups in moto: one node per InService instance, named after
  it, labelled like EKS GPU nodes, with allocatable GPUs/CPU/memory from the GPU catalogue.
- A scheduler binds Pending pods to a Ready, schedulable node that satisfies nodeName,
  nodeSelector and required node affinity (In/NotIn/Exists) and has the GPUs they request;
  a pod that fits nowhere stays Pending with a FailedScheduling-style condition.
- A kubelet admits each pod bound to its node (by the scheduler or created with nodeName)
  after `kubelet_delay_seconds` if the node's allocatable GPUs minus those of the pods it
  admitted before (Terminating ones included) cover the request, else the pod is Failed
  with reason OutOfnvidia.com/gpu, as the real kubelet rejects it. Admitted pods run, with
  container statuses; while `image_pulls_fail` is set they stay Pending in ImagePullBackOff.
  A pod with init containers stays Pending until they completed (`init_containers.py`: run
  for real in a sandbox whose commands are the image's; `jupyter_images` ship jupyter-lab).
  A pod with a readiness probe runs but is not Ready until the probe passes
  (`readiness.py`: after `probe_seconds`, never while `probes.probes_fail` is set).
- The kubelet finishes graceful deletions: a Terminating pod keeps running (and holding its
  GPUs) for its grace period times `termination_seconds_scale`, then is deleted.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from dataclasses import dataclass
from typing import Any, Self

from localcloud.deadline import BackgroundWork
from localcloud.kubernetes import init_containers, readiness, selectors
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.scheduling_failure import scheduling_failure
from localcloud.kubernetes.storage_simulation import (
    StorageSimulation,
    container_creating,
    containers_waiting,
)
from localcloud.kubernetes.store import DeleteOptions, ObjectStore, now

log = logging.getLogger("localcloud.cluster")
GPU = "nvidia.com/gpu"
TERMINAL = ("Succeeded", "Failed")
MAX_TERMINATION_MESSAGE = 4096  # bytes of a termination message the kubelet keeps (the tail)


@dataclass(frozen=True)
class NodeShape:
    gpu_type: str
    instance_type: str
    gpus: int
    cpus: int
    memory_gb: int
    # A node group in a public subnet: its nodes have an ExternalIP and ExternalDNS, as EC2
    # nodes with a public IPv4 address do; in a private subnet, internal addresses only.
    public_subnet: bool = False


def _gpu_request(pod: dict[str, Any]) -> int:
    return sum(
        int(
            (
                c.get("resources", {}).get("requests") or c.get("resources", {}).get("limits") or {}
            ).get(GPU, 0)
        )
        for c in pod["spec"].get("containers", [])
    )


def node_accepts(node: dict[str, Any], pod: dict[str, Any]) -> bool:
    labels = node["metadata"].get("labels", {})
    spec = pod["spec"]
    if spec.get("nodeName") and spec["nodeName"] != node["metadata"]["name"]:
        return False
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (
        (spec.get("affinity") or {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
    )
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(
        all(selectors.expression_matches(labels, e) for e in term.get("matchExpressions", []))
        for term in terms
    )


def node_is_ready(node: dict[str, Any]) -> bool:
    ready = any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in node.get("status", {}).get("conditions", [])
    )
    return ready and not node["spec"].get("unschedulable")


class SimulatedCluster(BackgroundWork):
    def __init__(
        self,
        store: ObjectStore,
        autoscaling: Any,
        shapes: dict[str, NodeShape],
        kubelet_delay_seconds: float = 0.5,
        termination_seconds_scale: float = 1.0,
        *,
        ec2: Any,
        probe_seconds: float = 1.0,
        jupyter_images: frozenset[str] = frozenset(),
    ):
        super().__init__()
        self.store = store
        self.storage = StorageSimulation(store, ec2)  # volume controllers, EBS CSI attach
        self._autoscaling = autoscaling
        self._shapes = shapes  # by GpuType
        self.kubelet_delay_seconds = kubelet_delay_seconds
        self.termination_seconds_scale = termination_seconds_scale  # real s per grace s
        self.image_pulls_fail = False  # fault injection: pods never start
        # The images whose PATH has jupyter-lab (init containers see it; init_containers.py).
        self.jupyter_images = jupyter_images
        # The init container scripts the stand-in runs (ours; tests may add their own).
        self.trusted_scripts = init_containers.SHIPPED_SCRIPTS
        self.probes = readiness.ReadinessProbes(store, probe_seconds)  # Running -> Ready
        self._bound_seen_at: dict[str, float] = {}  # pod uid -> when the kubelet saw it bound
        self._terminating_since: dict[str, float] = {}  # pod uid -> when it saw the deletion
        self._in_background(self._run, "simulated-cluster")

    def start(self) -> Self:
        self.sync_nodes()
        return super().start()

    def _run(self) -> None:
        last_sync = time.monotonic()
        while not self._stop.wait(0.05):
            try:
                if time.monotonic() - last_sync > 1.0:
                    self.sync_nodes()
                    last_sync = time.monotonic()
                self.storage.step()
                self.schedule()
                self.run_kubelet()
            except Exception:
                log.exception("simulated cluster step failed")

    # -- nodes ---------------------------------------------------------------------------
    def sync_nodes(self) -> None:
        wanted: dict[str, dict[str, Any]] = {}
        paginator = self._autoscaling.get_paginator("describe_auto_scaling_groups")
        for page in paginator.paginate():
            for group in page["AutoScalingGroups"]:
                tags = {t["Key"]: t["Value"] for t in group.get("Tags", [])}
                shape = self._shapes.get(tags.get("GpuType", ""))
                if shape is None:
                    continue
                for instance in group["Instances"]:
                    if instance["LifecycleState"] == "InService":
                        wanted[instance["InstanceId"]] = self._node(
                            instance["InstanceId"], instance["AvailabilityZone"], shape
                        )
        existing = {n["metadata"]["name"] for n in self.store.list("nodes", None)["items"]}
        for name in wanted.keys() - existing:
            self.store.create("nodes", "", wanted[name])
            log.info("node %s joined (%s)", name, wanted[name]["metadata"]["labels"]["GpuType"])
        for name in existing - wanted.keys():
            self.store.delete("nodes", "", name)
            log.info("node %s left", name)

    @staticmethod
    def _node(name: str, zone: str, shape: NodeShape) -> dict[str, Any]:
        capacity = {
            "cpu": str(shape.cpus),
            "memory": f"{shape.memory_gb}Gi",
            "pods": "110",
            GPU: str(shape.gpus),
        }
        return {
            "metadata": {
                "name": name,
                "labels": {
                    "GpuType": shape.gpu_type,
                    "node.kubernetes.io/instance-type": shape.instance_type,
                    "topology.kubernetes.io/zone": zone,
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                },
            },
            "spec": {"providerID": f"aws:///{zone}/{name}"},
            "status": {
                "capacity": capacity,
                "allocatable": capacity,
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "lastTransitionTime": now(),
                    }
                ],
                "addresses": _addresses(name, zone, shape.public_subnet),
            },
        }

    # -- scheduler -----------------------------------------------------------------------
    def _gpus_in_use(self, pods: list[dict[str, Any]]) -> dict[str, int]:
        used: dict[str, int] = {}
        for pod in pods:
            node = pod["spec"].get("nodeName")
            if node and pod["status"].get("phase") not in TERMINAL:
                used[node] = used.get(node, 0) + _gpu_request(pod)
        return used

    def schedule(self) -> None:
        pods = self.store.list("pods", None)["items"]
        nodes = self.store.list("nodes", None)["items"]
        used = self._gpus_in_use(pods)
        for pod in sorted(pods, key=lambda p: p["metadata"]["creationTimestamp"]):
            if pod["spec"].get("nodeName") or pod["status"].get("phase") != "Pending":
                continue
            wanted = _gpu_request(pod)
            claim_problem = self.storage.unschedulable(pod)
            candidates = [
                n
                for n in nodes
                if not claim_problem
                and node_is_ready(n)
                and node_accepts(n, pod)
                and int(n["status"]["allocatable"].get(GPU, 0)) - used.get(n["metadata"]["name"], 0)
                >= wanted
            ]
            fits = [n for n in candidates if not self.storage.conflicts(pod, n)]
            meta = pod["metadata"]
            if not fits:
                self._unschedulable(
                    pod, scheduling_failure(len(nodes), wanted, claim_problem, len(candidates))
                )
                continue
            node = fits[0]["metadata"]["name"]
            try:
                self.store.bind(meta["namespace"], meta["name"], node)
            except ApiError:
                continue  # deleted or bound meanwhile
            used[node] = used.get(node, 0) + wanted
            log.info("pod %s/%s bound to %s", meta["namespace"], meta["name"], node)

    def _unschedulable(self, pod: dict[str, Any], message: str) -> None:
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

        def mark(obj: dict[str, Any]) -> None:
            obj["status"]["conditions"] = [condition]

        meta = pod["metadata"]
        with contextlib.suppress(ApiError):
            self.store.update("pods", meta["namespace"], meta["name"], mark)

    # -- kubelet -------------------------------------------------------------------------
    def run_kubelet(self) -> None:
        pods = sorted(
            self.store.list("pods", None)["items"], key=lambda p: p["metadata"]["creationTimestamp"]
        )
        self._forget_pods_gone({p["metadata"]["uid"] for p in pods})
        self._finish_terminations(pods)
        self.probes.step(pods)
        nodes = {n["metadata"]["name"]: n for n in self.store.list("nodes", None)["items"]}
        allocatable = {
            name: int(n["status"]["allocatable"].get(GPU, 0)) for name, n in nodes.items()
        }
        used = _gpus_of_admitted_pods(pods)
        for pod in pods:
            node = pod["spec"].get("nodeName")
            meta = pod["metadata"]
            if (
                not node
                or node not in allocatable  # no kubelet there to run it
                or pod["status"].get("phase") != "Pending"
                or meta.get("deletionTimestamp")  # never started: _finish_terminations
            ):
                continue
            seen = self._bound_seen_at.setdefault(meta["uid"], time.monotonic())
            if time.monotonic() - seen < self.kubelet_delay_seconds:
                continue
            if not _admitted(pod):
                wanted = _gpu_request(pod)
                if used.get(node, 0) + wanted > allocatable[node]:
                    self._reject(pod, wanted, used.get(node, 0), allocatable[node])
                    continue
                used[node] = used.get(node, 0) + wanted
            if self.storage.waiting_for_volumes(pod, nodes[node]):  # ContainerCreating
                if not pod["status"].get("containerStatuses"):
                    with contextlib.suppress(ApiError):
                        self.store.update(
                            "pods", meta["namespace"], meta["name"], container_creating
                        )
                continue
            if self.image_pulls_fail:
                if not _waiting_for_image(pod):
                    with contextlib.suppress(ApiError):
                        self.store.update("pods", meta["namespace"], meta["name"], _pull_failed)
                continue
            if pod["spec"].get("initContainers") and not init_containers.completed(pod):
                self._initialize(pod)
                continue
            try:
                self.store.update(
                    "pods",
                    meta["namespace"],
                    meta["name"],
                    functools.partial(_start_pod, node=node),
                )
                log.info("pod %s/%s running on %s", meta["namespace"], meta["name"], node)
            except ApiError:
                pass
            self._bound_seen_at.pop(meta["uid"], None)

    def _initialize(self, pod: dict[str, Any]) -> None:
        """One step of a pod's init containers: start them (one kubelet pass: the pod is seen
        Pending, initializing), then run them and record how they ended (the next pass starts
        the containers). A failed one keeps the pod Pending."""
        meta = pod["metadata"]
        with contextlib.suppress(ApiError):
            if not init_containers.started(pod):
                self.store.update(
                    "pods", meta["namespace"], meta["name"], init_containers.initializing
                )
            elif not init_containers.failed(pod):
                outcomes = init_containers.run_all(pod, self.jupyter_images, self.trusted_scripts)
                self.store.update(
                    "pods",
                    meta["namespace"],
                    meta["name"],
                    functools.partial(init_containers.record, outcomes=outcomes),
                )

    def _reject(self, pod: dict[str, Any], wanted: int, used: int, capacity: int) -> None:
        meta = pod["metadata"]
        message = (
            f"Pod was rejected: Node didn't have enough resource: {GPU}, "
            f"requested: {wanted}, used: {used}, capacity: {capacity}"
        )

        def reject(obj: dict[str, Any]) -> None:
            obj["status"].update(phase="Failed", reason=f"OutOf{GPU}", message=message)

        with contextlib.suppress(ApiError):
            self.store.update("pods", meta["namespace"], meta["name"], reject)
            log.info("pod %s/%s rejected: %s", meta["namespace"], meta["name"], message)
        self._bound_seen_at.pop(meta["uid"], None)

    def _finish_terminations(self, pods: list[dict[str, Any]]) -> None:
        """The kubelet's half of a graceful deletion: stop the containers, then delete the pod
        with grace 0 and its UID as precondition. Our pods' PID 1 (`bash -c`) ignores
        SIGTERM, so stopping takes the whole grace period (times `termination_seconds_scale`);
        a pod whose containers never started goes at once."""
        moment = time.monotonic()
        for pod in pods:
            meta = pod["metadata"]
            if not meta.get("deletionTimestamp"):
                continue
            since = self._terminating_since.setdefault(meta["uid"], moment)
            grace = (meta.get("deletionGracePeriodSeconds") or 0) * self.termination_seconds_scale
            if _admitted(pod) and moment - since < grace:
                continue
            if _running(pod):
                self._stop_containers(pod)
            with contextlib.suppress(ApiError):  # gone already, or a new pod of that name
                self.store.delete(
                    "pods", meta["namespace"], meta["name"], DeleteOptions(0, meta["uid"])
                )
                log.info("pod %s/%s stopped and deleted", meta["namespace"], meta["name"])

    def _stop_containers(self, pod: dict[str, Any]) -> None:
        """The kubelet's status write as the containers stop, before its final delete: each
        container terminated (SIGKILL after the grace period: exit 137), with the
        termination message a preStop exec hook left (the listing of its volumes, the
        stand-in having no filesystem), of which the kubelet keeps the last 4096 bytes.
        A finalizer keeps the pod, with this status, after the final delete."""
        meta = pod["metadata"]
        listing = self.storage.listing_for(pod)[-MAX_TERMINATION_MESSAGE:]
        hooked = {
            c["name"]
            for c in pod["spec"].get("containers", [])
            if ((c.get("lifecycle") or {}).get("preStop") or {}).get("exec")
        }

        def stop(obj: dict[str, Any]) -> None:
            finished = now()
            for status in obj["status"].get("containerStatuses") or []:
                running = (status.get("state") or {}).get("running")
                if running is None:
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
                    condition.update(status="False", reason="PodCompleted")

        with contextlib.suppress(ApiError):
            self.store.update("pods", meta["namespace"], meta["name"], stop)

    def _forget_pods_gone(self, uids: set[str]) -> None:
        for seen in (self._bound_seen_at, self._terminating_since):
            for uid in seen.keys() - uids:
                del seen[uid]


def _running(pod: dict[str, Any]) -> bool:
    return any(
        "running" in (s.get("state") or {}) for s in pod["status"].get("containerStatuses") or []
    )


def _waiting_for_image(pod: dict[str, Any]) -> bool:
    return any(
        (s.get("state", {}).get("waiting") or {}).get("reason") == "ImagePullBackOff"
        for s in pod["status"].get("containerStatuses") or []
    )


def _fake_ip(name: str) -> str:
    digest = sum(name.encode())
    return f"10.0.{digest % 250}.{(digest // 250) % 250 + 1}"


def _addresses(name: str, zone: str, public: bool) -> list[dict[str, str]]:
    """A node's addresses as the EC2 cloud provider reports them (the order EKS shows),
    with EC2's DNS names for the zone's region."""
    region = zone[:-1]
    internal_domain, public_domain = (
        ("ec2.internal", "compute-1.amazonaws.com")
        if region == "us-east-1"
        else (f"{region}.compute.internal", f"{region}.compute.amazonaws.com")
    )
    internal = _fake_ip(name)
    addresses = [
        {"type": "InternalIP", "address": internal},
        {"type": "InternalDNS", "address": f"ip-{internal.replace('.', '-')}.{internal_domain}"},
        {"type": "Hostname", "address": name},
    ]
    if public:
        digest = sum(name.encode()) * 7
        external = f"54.{digest % 250 + 1}.{(digest // 250) % 250}.{len(name) + 10}"
        addresses[1:1] = [
            {"type": "ExternalIP", "address": external},
            {"type": "ExternalDNS", "address": f"ec2-{external.replace('.', '-')}.{public_domain}"},
        ]
    return addresses


def _admitted(pod: dict[str, Any]) -> bool:
    """The kubelet accepted the pod: it runs, or it waits for its image (ImagePullBackOff)."""
    status = pod["status"]
    return status.get("phase") == "Running" or bool(
        status.get("phase") == "Pending" and status.get("containerStatuses")
    )


def _gpus_of_admitted_pods(pods: list[dict[str, Any]]) -> dict[str, int]:
    """GPUs in use per node as the kubelet counts them: every admitted pod, Terminating ones
    included (their containers still hold the devices)."""
    used: dict[str, int] = {}
    for pod in pods:
        node = pod["spec"].get("nodeName")
        if node and _admitted(pod):
            used[node] = used.get(node, 0) + _gpu_request(pod)
    return used


def _start_pod(pod: dict[str, Any], node: str) -> None:
    started = now()
    pod["status"].update(
        phase="Running",
        hostIP=_fake_ip(node),
        podIP=_fake_ip(pod["metadata"]["name"]),
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


def _pull_failed(pod: dict[str, Any]) -> None:
    containers_waiting(
        pod,
        lambda c: {
            "reason": "ImagePullBackOff",
            "message": f'Back-off pulling image "{c.get("image", "")}"',
        },
    )
