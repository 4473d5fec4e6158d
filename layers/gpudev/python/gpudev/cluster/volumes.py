"""A named disk in the pod: a statically provisioned PersistentVolume for the EBS volume
the lifecycle made (the EBS CSI driver, its volume id as volumeHandle, node affinity on its
zone, `Retain`: deleting the claim or the volume object never deletes the EBS volume, whose
snapshot comes first) and a claim bound to it by name, mounted at /home/dev by pod 0.

Claims are namespaced and go with the reservation's other objects (`KINDS`); the
PersistentVolume is cluster-scoped, created and deleted here, found by the reservation label."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpudev.cluster import objects
from gpudev.cluster.names import Names
from gpudev.cluster.objects_client import KubernetesUnavailable, ObjectNameTaken
from gpudev.cluster.vocabulary import EBS_CSI_DRIVER, RESERVATION_LABEL, ZONE_LABEL
from gpudev.models import Reservation

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

HOME_VOLUME = "dev-home"  # the pod's volume mounted at /home/dev


@dataclass(frozen=True)
class HomeDisk:
    """The EBS volume a reservation's pod 0 mounts at /home/dev."""

    volume_id: str
    zone: str
    size_gb: int


def _home_object(kind: str, reservation: Reservation, spec: dict[str, Any]) -> dict[str, Any]:
    """The PersistentVolume or its claim: both named `Names.home`, ReadWriteOnce and of no
    storage class (static provisioning: the claim binds to this volume only)."""
    return objects.manifest(
        kind,
        reservation,
        Names.of(reservation).home,
        spec={"accessModes": ["ReadWriteOnce"], "storageClassName": "", **spec},
    )


def persistent_volume(reservation: Reservation, namespace: str, disk: HomeDisk) -> dict[str, Any]:
    zone = {"key": ZONE_LABEL, "operator": "In", "values": [disk.zone]}
    return _home_object(
        "PersistentVolume",
        reservation,
        {
            "capacity": {"storage": f"{disk.size_gb}Gi"},
            "persistentVolumeReclaimPolicy": "Retain",
            "volumeMode": "Filesystem",
            "claimRef": {"namespace": namespace, "name": Names.of(reservation).home},
            "csi": {"driver": EBS_CSI_DRIVER, "volumeHandle": disk.volume_id, "fsType": "ext4"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [zone]}]}},
        },
    )


def claim(reservation: Reservation, disk: HomeDisk) -> dict[str, Any]:
    return _home_object(
        "PersistentVolumeClaim",
        reservation,
        {
            "volumeName": Names.of(reservation).home,
            "resources": {"requests": {"storage": f"{disk.size_gb}Gi"}},
        },
    )


def _status(exc: Exception) -> int:
    return int(getattr(exc, "status", 0) or 0)


class PersistentVolumes:
    """The reservation's PersistentVolumes (cluster-scoped), through the official client."""

    def __init__(self, api_client: ApiClient):
        from kubernetes.client import CoreV1Api

        self._api = CoreV1Api(api_client)

    def _call(self, operation: str, *args: Any, **kwargs: Any) -> Any:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return getattr(self._api, operation)(*args, **kwargs)
        except ApiException as exc:
            if _status(exc) >= 500 or _status(exc) == 429:
                raise KubernetesUnavailable(f"{operation}: HTTP {_status(exc)}") from exc
            raise
        except HTTPError as exc:
            raise KubernetesUnavailable(f"{operation}: {type(exc).__name__}") from exc

    def create(self, manifest: dict[str, Any]) -> None:
        """Idempotent for our own object; another reservation's is never taken over."""
        from kubernetes.client.exceptions import ApiException

        try:
            self._call("create_persistent_volume", manifest)
        except ApiException as exc:
            if _status(exc) != 409:
                raise
            name = manifest["metadata"]["name"]
            existing = self._call("read_persistent_volume", name, _preload_content=False)
            holder = (json.loads(existing.data)["metadata"].get("labels") or {}).get(
                RESERVATION_LABEL
            )
            if holder != manifest["metadata"]["labels"][RESERVATION_LABEL]:
                raise ObjectNameTaken(f"PersistentVolume {name} belongs to {holder}") from exc

    def delete_all(self, reservation_id: str) -> int:
        from kubernetes.client.exceptions import ApiException

        listed = self._call(
            "list_persistent_volume",
            label_selector=f"{RESERVATION_LABEL}={reservation_id}",
            _preload_content=False,
        )
        items = json.loads(listed.data).get("items", [])
        for item in items:
            try:
                self._call("delete_persistent_volume", item["metadata"]["name"])
            except ApiException as exc:
                if _status(exc) != 404:
                    raise
        return len(items)

    def share_reservations(self) -> set[str]:
        """The reservations that have a personal share's PersistentVolume (EFS CSI, labelled
        with the reservation): the sweeper's view of volumes whose claim may be gone."""
        from gpudev.cluster.shared_files import EFS_CSI_DRIVER

        listed = self._call(
            "list_persistent_volume", label_selector=RESERVATION_LABEL, _preload_content=False
        )
        return {
            str(item["metadata"]["labels"][RESERVATION_LABEL])
            for item in json.loads(listed.data).get("items", [])
            if ((item.get("spec") or {}).get("csi") or {}).get("driver") == EFS_CSI_DRIVER
            and not item["metadata"].get("deletionTimestamp")  # being deleted already
        }

    def zone_of(self, node_name: str) -> str:
        """The zone of a node (its topology label): where its pods' volumes must be."""
        node = self._call("read_node", node_name, _preload_content=False)
        labels = json.loads(node.data)["metadata"].get("labels") or {}
        zone = labels.get(ZONE_LABEL)
        if not zone:
            raise RuntimeError(f"node {node_name} has no {ZONE_LABEL} label")
        return str(zone)
