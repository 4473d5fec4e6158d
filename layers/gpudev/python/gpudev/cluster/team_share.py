"""The optional team share in the pod (docs/shared-files.md, "The team share"): the
deployment's file system through the team's one access point, a statically provisioned
PersistentVolume and its claim per reservation (as the personal share's:
cluster/shared_files.py), mounted in every pod of the reservation and linked from /shared
by startup.sh. Read-only (`ro`) is said three times, as Kubernetes reads it: the
PersistentVolume's `csi.readOnly` (the driver's NodePublishVolume mounts it read-only), the
pod volume's `persistentVolumeClaim.readOnly` and the container's `volumeMount.readOnly`;
its access mode is ReadOnlyMany."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpudev.cluster import objects
from gpudev.cluster.shared_files import NOMINAL_CAPACITY, SHARE_PARENT, efs_volume_spec
from gpudev.models import Reservation

MOUNT_PATH = "/shared"  # what users see: startup.sh's link to POD_MOUNT_PATH
# Under dev's own /run/gpu-dev/share, as the personal share: the access point makes every
# NFS request as dev whoever asks, so an added user (gh-*) is kept out by the parent.
POD_MOUNT_PATH = f"{SHARE_PARENT}/team"
VOLUME = "shared-team"  # the pod's volume name


@dataclass(frozen=True)
class TeamShare:
    """The team access point on the deployment's file system, and how pods mount it."""

    file_system_id: str
    access_point_id: str
    read_only: bool

    @property
    def volume_handle(self) -> str:
        return f"{self.file_system_id}::{self.access_point_id}"

    @property
    def access_modes(self) -> list[str]:
        return ["ReadOnlyMany" if self.read_only else "ReadWriteMany"]


def name_of(reservation: Reservation) -> str:
    """The PersistentVolume and its claim (PersistentVolumes are cluster-scoped)."""
    return f"gpu-dev-{reservation.reservation_id}-team"


def _object(
    kind: str, reservation: Reservation, share: TeamShare, spec: dict[str, Any]
) -> dict[str, Any]:
    return objects.manifest(
        kind,
        reservation,
        name_of(reservation),
        spec={"accessModes": share.access_modes, "storageClassName": "", **spec},
    )


def persistent_volume(reservation: Reservation, namespace: str, share: TeamShare) -> dict[str, Any]:
    return _object(
        "PersistentVolume",
        reservation,
        share,
        efs_volume_spec(namespace, name_of(reservation), share.volume_handle, share.read_only),
    )


def claim(reservation: Reservation, share: TeamShare) -> dict[str, Any]:
    return _object(
        "PersistentVolumeClaim",
        reservation,
        share,
        {
            "volumeName": name_of(reservation),
            "resources": {"requests": {"storage": NOMINAL_CAPACITY}},
        },
    )


def mount_in_pod(pod: dict[str, Any], claim_name: str, read_only: bool) -> None:
    """The team share's volume and its mount, added to the pod's dev container."""
    spec = pod["spec"]
    volume: dict[str, Any] = {"claimName": claim_name}
    mount: dict[str, Any] = {"name": VOLUME, "mountPath": POD_MOUNT_PATH}
    if read_only:
        volume["readOnly"] = True
        mount["readOnly"] = True
    spec["volumes"].append({"name": VOLUME, "persistentVolumeClaim": volume})
    spec["containers"][0]["volumeMounts"].append(mount)
