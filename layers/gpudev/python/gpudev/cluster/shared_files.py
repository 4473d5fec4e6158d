"""The user's personal network file system in the pod (docs/shared-files.md): a statically
provisioned PersistentVolume of the EFS CSI driver (`volumeHandle` `fs-…::fsap-…`: the
deployment's file system through the user's own access point), a claim bound to it by name,
and the volume and mount every pod of the reservation gets at /shared-personal, rank 0 and
the others alike (ReadWriteMany). Compiler caches live there (`cache_environment`).

Like the named disk's (cluster/volumes.py) the PersistentVolume is labelled with the
reservation and deleted at tear down; `Retain`: deleting it never touches the file system."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpudev.cluster import objects
from gpudev.models import Reservation

EFS_CSI_DRIVER = "efs.csi.aws.com"
MOUNT_PATH = "/shared-personal"  # what users see: startup.sh's link to POD_MOUNT_PATH
# Where the claim is mounted: under /run/gpu-dev/share, which startup.sh makes dev's alone
# (0700). The access point makes every NFS request as dev whoever asks, so only a local
# check on the parent keeps an added user (gh-*) out of the owner's share (docs/security.md).
SHARE_PARENT = "/run/gpu-dev/share"
POD_MOUNT_PATH = f"{SHARE_PARENT}/mnt"
VOLUME = "shared-personal"  # the pod's volume name
# EFS has no size: the CSI driver ignores the capacity, Kubernetes requires one.
NOMINAL_CAPACITY = "5Ti"
CCACHE_DIR = f"{MOUNT_PATH}/.cache/ccache"
SCCACHE_DIR = f"{MOUNT_PATH}/.cache/sccache"


@dataclass(frozen=True)
class PersonalShare:
    """The user's access point on the deployment's file system."""

    file_system_id: str
    access_point_id: str

    @property
    def volume_handle(self) -> str:
        """The EFS CSI driver's static handle: `<file system>::<access point>` (an empty
        subpath between the two colons)."""
        return f"{self.file_system_id}::{self.access_point_id}"


def name_of(reservation: Reservation) -> str:
    """The PersistentVolume and its claim: by the full id (PersistentVolumes are
    cluster-scoped)."""
    return f"gpu-dev-{reservation.reservation_id}-shared"


def _object(kind: str, reservation: Reservation, spec: dict[str, Any]) -> dict[str, Any]:
    return objects.manifest(
        kind,
        reservation,
        name_of(reservation),
        spec={"accessModes": ["ReadWriteMany"], "storageClassName": "", **spec},
    )


def persistent_volume(
    reservation: Reservation, namespace: str, share: PersonalShare
) -> dict[str, Any]:
    return _object(
        "PersistentVolume",
        reservation,
        efs_volume_spec(namespace, name_of(reservation), share.volume_handle),
    )


def efs_volume_spec(
    namespace: str, claim_name: str, volume_handle: str, read_only: bool = False
) -> dict[str, Any]:
    """A static EFS PersistentVolume's spec (the personal share's and the team share's),
    bound to its claim. TLS in transit (`tls`) and IAM authorization (`iam`): the file
    system policy refuses a mount without either (docs/security.md). Read-only: the
    driver's NodePublishVolume mounts it so (`csi.readOnly`)."""
    csi: dict[str, Any] = {"driver": EFS_CSI_DRIVER, "volumeHandle": volume_handle}
    if read_only:
        csi["readOnly"] = True
    return {
        "capacity": {"storage": NOMINAL_CAPACITY},
        "persistentVolumeReclaimPolicy": "Retain",
        "volumeMode": "Filesystem",
        "mountOptions": ["tls", "iam"],
        "claimRef": {"namespace": namespace, "name": claim_name},
        "csi": csi,
    }


def claim(reservation: Reservation) -> dict[str, Any]:
    return _object(
        "PersistentVolumeClaim",
        reservation,
        {
            "volumeName": name_of(reservation),
            "resources": {"requests": {"storage": NOMINAL_CAPACITY}},
        },
    )


def cache_environment(ccache_max_size: str) -> dict[str, str]:
    """ccache's and sccache's caches on the user's own share: a cache another user can
    write would let them poison this user's builds (docs/security.md)."""
    return {
        "CCACHE_DIR": CCACHE_DIR,
        "CCACHE_MAXSIZE": ccache_max_size,
        "SCCACHE_DIR": SCCACHE_DIR,
        "SCCACHE_CACHE_SIZE": ccache_max_size,
    }


def mount_in_pod(pod: dict[str, Any], claim_name: str, ccache_max_size: str) -> None:
    """The share's volume, its mount under dev's own /run/gpu-dev/share (linked from
    /shared-personal by startup.sh) and the cache variables, added to the pod's dev
    container (every pod of the reservation)."""
    spec = pod["spec"]
    container = spec["containers"][0]
    spec["volumes"].append({"name": VOLUME, "persistentVolumeClaim": {"claimName": claim_name}})
    container["volumeMounts"].append({"name": VOLUME, "mountPath": POD_MOUNT_PATH})
    container["env"].extend(
        {"name": k, "value": v} for k, v in cache_environment(ccache_max_size).items()
    )
