"""The cluster's storage side, stepped by the simulated cluster with its scheduler and
kubelet: the persistent volume controllers (`volume_binding.py`), the EBS CSI attach
(`csi_attacher.py`), and the answers the scheduler and the kubelet need about a pod's
claims (`volume_scheduling.py`), from one view of claims and volumes per step."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from localcloud.kubernetes import csi_attacher, events, volume_scheduling
from localcloud.kubernetes.csi_attacher import EbsCsiAttacher
from localcloud.kubernetes.efs_csi import DRIVER as EFS_DRIVER
from localcloud.kubernetes.efs_csi import EfsCsiNode
from localcloud.kubernetes.store import ObjectStore
from localcloud.kubernetes.volume_binding import PersistentVolumeController

Obj = dict[str, Any]
# A failed EFS mount is tried again this often, as the kubelet's volume manager retries (its
# back-off starts at 500 ms and grows); a mount that succeeded is never checked again.
EFS_RETRY_SECONDS = 2.0


class StorageSimulation:
    def __init__(self, store: ObjectStore, ec2: Any, efs: Any = None):
        self.store = store
        self.binder = PersistentVolumeController(store)
        self.attacher = EbsCsiAttacher(store, ec2)
        self.efs = EfsCsiNode(efs, ec2) if efs is not None else None  # no EFS: never mounts
        self._claims: volume_scheduling.Claims = {}
        self._volumes: volume_scheduling.Volumes = {}
        self._said: set[tuple[str, str]] = set()  # (pod uid, FailedMount message) recorded
        # EFS mounts by (pod uid, volume name): done, or the last failure and when it was tried
        self._efs_mounted: set[tuple[str, str]] = set()
        self._efs_failed: dict[tuple[str, str], tuple[float, str]] = {}
        # What a preStop hook listing each EBS volume's files writes (by volume id; for our
        # hook, gpudev.cluster.home_listing, its marker line then the listing): the stand-in
        # has no filesystem, so tests say what the hook finds on a disk.
        self.contents: dict[str, str] = {}

    def step(self) -> None:
        claims = self.store.list("persistentvolumeclaims", None, frozen=True)["items"]
        volumes = self.store.list("persistentvolumes", None, frozen=True)["items"]
        if not claims and not volumes and not self.attacher.attachments:
            self._claims, self._volumes = {}, {}
            return  # nothing to do
        pods = self.store.list("pods", None, frozen=True)["items"]
        self.binder.step(pods)
        self._claims = {
            (c["metadata"]["namespace"], c["metadata"]["name"]): c
            for c in self.store.list("persistentvolumeclaims", None, frozen=True)["items"]
        }
        self._volumes = {
            v["metadata"]["name"]: v
            for v in self.store.list("persistentvolumes", None, frozen=True)["items"]
        }
        nodes = {
            n["metadata"]["name"]: n for n in self.store.list("nodes", None, frozen=True)["items"]
        }
        self.attacher.step(pods, nodes, self._claims, self._volumes)

    # -- for the scheduler ---------------------------------------------------------------
    def unschedulable(self, pod: Obj) -> str | None:
        """Why no node can take the pod because of its claims (PreFilter), or None."""
        if not volume_scheduling.claim_names(pod):
            return None
        return volume_scheduling.claim_problem(pod, self._claims)

    def conflicts(self, pod: Obj, node: Obj) -> bool:
        """A bound volume of the pod cannot reach the node (Filter)."""
        return bool(volume_scheduling.claim_names(pod)) and volume_scheduling.node_conflict(
            pod, node, self._claims, self._volumes
        )

    # -- for the kubelet -----------------------------------------------------------------
    def waiting_for_volumes(self, pod: Obj, node: Obj) -> bool:
        """The kubelet cannot start the pod's containers yet: a claim it cannot mount
        (FailedMount event) or an EBS volume not attached to this node."""
        if not volume_scheduling.claim_names(pod):
            return False
        problem = volume_scheduling.mount_problem(
            pod, node, self._claims, self._volumes
        ) or self._efs_problem(pod, node)
        if problem is not None:
            said = (pod["metadata"]["uid"], problem)
            if said not in self._said:
                self._said.add(said)
                host = node["metadata"]["name"]
                events.record(
                    self.store, pod, "Warning", "FailedMount", problem, "kubelet", host=host
                )
            return True
        instance = csi_attacher.instance_of(node)
        return not all(
            self.attacher.attached(v["spec"]["csi"]["volumeHandle"], instance)
            for v in volume_scheduling.bound_volumes(pod, self._claims, self._volumes)
            if (v["spec"].get("csi") or {}).get("driver") == csi_attacher.DRIVER
        )

    def _efs_problem(self, pod: Obj, node: Obj) -> str | None:
        """The first EFS volume of the pod the EFS CSI driver cannot mount on the node."""
        for volume in volume_scheduling.bound_volumes(pod, self._claims, self._volumes):
            if (volume["spec"].get("csi") or {}).get("driver") != EFS_DRIVER:
                continue
            if self.efs is None:
                name = volume["metadata"]["name"]
                return (
                    f'MountVolume.SetUp failed for volume "{name}" : kubernetes.io/csi: '
                    f"mounter.SetUpAt failed to get CSI client: driver name {EFS_DRIVER} "
                    "not found in the list of registered CSI drivers"
                )
            key = (pod["metadata"]["uid"], volume["metadata"]["name"])
            if key in self._efs_mounted:
                continue
            tried = self._efs_failed.get(key)
            if tried is not None and time.monotonic() - tried[0] < EFS_RETRY_SECONDS:
                return tried[1]
            problem = self.efs.mount_problem(pod, node, volume)
            if problem is not None:
                self._efs_failed[key] = (time.monotonic(), problem)
                return problem
            self._efs_failed.pop(key, None)
            self._efs_mounted.add(key)
        return None

    def forget_pods_but(self, uids: set[str]) -> None:
        """Forget the EFS mounts of pods that are gone."""
        self._efs_mounted = {key for key in self._efs_mounted if key[0] in uids}
        for key in [k for k in self._efs_failed if k[0] not in uids]:
            del self._efs_failed[key]

    def listing_for(self, pod: Obj) -> str:
        """What a preStop hook listing the pod's mounted EBS volumes writes: the contents
        given for them (empty when none were given)."""
        return "".join(
            self.contents.get(v["spec"]["csi"]["volumeHandle"], "")
            for v in volume_scheduling.bound_volumes(pod, self._claims, self._volumes)
            if (v["spec"].get("csi") or {}).get("driver") == csi_attacher.DRIVER
        )


def container_creating(pod: Obj) -> None:
    """The kubelet admitted the pod (its GPUs are held) and waits for its volumes."""
    containers_waiting(pod, lambda _container: {"reason": "ContainerCreating"})


def containers_waiting(pod: Obj, waiting: Callable[[Obj], Obj]) -> None:
    """Every container not started, each `state.waiting` given by `waiting(container)`."""
    pod["status"]["containerStatuses"] = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "started": False,
            "state": {"waiting": waiting(c)},
        }
        for c in pod["spec"].get("containers", [])
    ]
