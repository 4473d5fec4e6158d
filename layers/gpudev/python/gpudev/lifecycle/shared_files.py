"""The reservation's personal share at provision (docs/shared-files.md): the user's access
point (made on their first reservation: shared_files/service.py), then a PersistentVolume
and claim on it that every pod of the reservation mounts at /shared-personal. Tear down
deletes both with the reservation's other objects (found by its label); the file system and
the access point stay."""

from __future__ import annotations

from gpudev.cluster import shared_files
from gpudev.cluster.volumes import PersistentVolumes
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.models import Reservation
from gpudev.shared_files.service import personal_access_point


def mount_shared_files(lc: Lifecycle, reservation: Reservation) -> str | None:
    """The claim's name, or None when the deployment has no shared file system."""
    settings = lc.shared_files
    if settings is None or not settings.enabled:
        return None
    file_system = settings.file_system_id
    access_point = personal_access_point(lc.conn, lc.efs, file_system, reservation.user_id)
    share = shared_files.PersonalShare(file_system, access_point)
    PersistentVolumes(lc.api_client).create(
        shared_files.persistent_volume(reservation, lc.namespace_of(reservation), share)
    )
    lc.objects(reservation).create(shared_files.claim(reservation))
    return shared_files.name_of(reservation)
