"""A simulated EKS cluster behind the stand-in, in one background loop:

- nodes follow the Auto Scaling groups in moto (`nodes.py`, every second), and post their
  status as a heartbeat (`nodes.heartbeat`);
- events older than `event_ttl_seconds` (kube-apiserver's --event-ttl, 1 h) expire
  (`events.py`, every second);
- the persistent volume controllers and the EBS CSI attach (`storage_simulation.py`);
- a scheduler binds Pending pods to nodes that fit them (`scheduler.py`);
- the DaemonSet controller runs a DaemonSet's pod on every node that fits (`daemonsets.py`);
- a kubelet admits, starts (init containers first), probes and stops them (`kubelet.py`,
  `kubelet_admission.py`, `init_containers.py`, `readiness.py`, `pod_termination.py`).

Tests tune it through the kubelet's settings (`kubelet.image_pulls_fail`,
`jupyter_images`, `shell_less_images`, `crashing_images`, `trusted_scripts`) and
`probes.probes_fail`."""

from __future__ import annotations

import logging
import time
from typing import Any, Self

from localcloud.deadline import BackgroundWork
from localcloud.kubernetes import events, readiness
from localcloud.kubernetes.container_logs import ContainerLogs
from localcloud.kubernetes.daemonsets import DaemonSets
from localcloud.kubernetes.kubelet import Kubelet
from localcloud.kubernetes.nodes import NodeShape, heartbeat, node_accepts, sync_nodes
from localcloud.kubernetes.pod_termination import PodTerminations
from localcloud.kubernetes.scheduler import Scheduler
from localcloud.kubernetes.storage_simulation import StorageSimulation
from localcloud.kubernetes.store import ObjectStore

log = logging.getLogger("localcloud.cluster")
__all__ = ["NodeShape", "SimulatedCluster", "node_accepts"]


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
        efs: Any = None,
        probe_seconds: float = 1.0,
        jupyter_images: frozenset[str] = frozenset(),
        container_logs: ContainerLogs | None = None,
    ):
        super().__init__()
        self.store = store
        # volume controllers, EBS CSI attach, EFS CSI mounts
        self.storage = StorageSimulation(store, ec2, efs)
        self._autoscaling = autoscaling
        self._ec2 = ec2  # an EFA node's public address is its instance's (nodes.py)
        self._shapes = shapes  # by GpuType
        self.probes = readiness.ReadinessProbes(store, probe_seconds)  # Running -> Ready
        self._terminations = PodTerminations(store, self.storage, termination_seconds_scale)
        self._scheduler = Scheduler(store, self.storage)
        self.kubelet = Kubelet(
            store,
            self.storage,
            self.probes,
            self._terminations,
            kubelet_delay_seconds,
            jupyter_images,
            container_logs,
        )
        self.daemon_sets = DaemonSets(store)  # pods on every node that fits, as they join
        self.event_ttl_seconds = events.EVENT_TTL_SECONDS
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
                    heartbeat(self.store)
                    events.expire(self.store, self.event_ttl_seconds)
                    last_sync = time.monotonic()
                self.step()
            except Exception:
                log.exception("simulated cluster step failed")

    def step(self) -> None:
        """One tick: the volume controllers and attach, the DaemonSet controller, the
        scheduler, the kubelets."""
        self.storage.step()
        self.daemon_sets.step()
        self._scheduler.schedule()
        self.kubelet.step()

    def sync_nodes(self) -> None:
        sync_nodes(self.store, self._autoscaling, self._shapes, self._ec2)
