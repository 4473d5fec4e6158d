"""The reservation's team share at provision (docs/shared-files.md, "The team share"): a
PersistentVolume and claim on the team's access point that every pod of the reservation
mounts at /shared, read-only or read-write as the deployment says. Tear down deletes both
with the reservation's other objects (found by its label); the access point stays."""

from __future__ import annotations

from gpudev.cluster import team_share
from gpudev.cluster.volumes import PersistentVolumes
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.models import Reservation


def mount_team_share(lc: Lifecycle, reservation: Reservation) -> team_share.TeamShare | None:
    """The share every pod mounts (its claim: `team_share.name_of`), or None when off."""
    settings = lc.shared_files
    if settings is None or not settings.team_enabled:
        return None
    share = team_share.TeamShare(
        settings.file_system_id, settings.team_access_point_id, settings.team_share == "ro"
    )
    PersistentVolumes(lc.api_client).create(
        team_share.persistent_volume(reservation, lc.namespace_of(reservation), share)
    )
    lc.objects(reservation).create(team_share.claim(reservation, share))
    return share
