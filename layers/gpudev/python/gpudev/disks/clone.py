"""A clone's EBS side (`gpu-dev disk clone SRC DST`): DST's clone job copies SRC's latest
completed snapshot (CopySnapshot, same region), tagged as DST's, so DST's first reservation
restores from it as from any snapshot of its own (`DiskVolumes.create_volume` takes the
disk's latest completed snapshot). The copy belongs to DST alone: SRC's deletion and the
purge of SRC's snapshots leave it (docs/decisions.md, "disk clone").

CopySnapshot takes no client token: the copy carries the clone operation's id
(`CLONED_BY_TAG`: DST's disk id), and a job delivered again, or a later operation on DST,
finds it instead of copying twice. The job
finishes when the copy completed; until then it is retried (`CloneNotReady`), and the disk's
operation stays `running`, which keeps reservations from taking the disk meanwhile."""

from __future__ import annotations

from typing import Any

from gpudev.disks.ebs import USER_TAG, disk_tags
from gpudev.disks.volumes import DiskRef, DiskVolumes
from gpudev.errors import GpuDevError
from gpudev.models import Disk

CLONED_BY_TAG = "gpu-dev-cloned-by"


class CloneNotReady(GpuDevError):
    """The copy is still pending: the job is delivered again later."""


class CloneSourceLost(GpuDevError):
    """The source disk or its snapshots are gone before the copy was made."""


def clone_tags(disk: Disk) -> list[dict[str, str]]:
    """The copy's tags: DST's, with the clone in place of a reservation."""
    disk_id = str(disk.disk_id)
    return [
        *disk_tags(disk.user_id, disk.disk_name, f"clone-{disk_id}"),
        {"Key": CLONED_BY_TAG, "Value": disk_id},
    ]


class DiskClones:
    def __init__(self, ec2: Any):
        self._ec2 = ec2

    def copied(self, disk: Disk) -> dict[str, Any] | None:
        """The copy made for this disk, if any (not one that failed)."""
        snapshots = self._ec2.describe_snapshots(
            OwnerIds=["self"],
            Filters=[
                {"Name": f"tag:{USER_TAG}", "Values": [disk.user_id]},
                {"Name": f"tag:{CLONED_BY_TAG}", "Values": [str(disk.disk_id)]},
                {"Name": "status", "Values": ["pending", "completed"]},
            ],
        )["Snapshots"]
        return max(snapshots, key=lambda s: s["StartTime"], default=None)

    def copy(self, disk: Disk, source: Disk | None) -> str:
        """Make sure DST has its copy of `source`'s latest completed snapshot: its id once
        completed; CloneNotReady while pending; CloneSourceLost when there is nothing to
        copy any more."""
        copy = self.copied(disk)
        if copy is None:
            latest = None
            if source is not None:
                ref = DiskRef(
                    source.user_id,
                    source.disk_name,
                    reservation_id=disk.disk_id,  # not used by the search
                    tagged_name=source.tagged_name,
                )
                latest = DiskVolumes(self._ec2).latest_snapshot(ref)
            if latest is None:
                raise CloneSourceLost(
                    "the source disk has no completed snapshot any more (deleted and purged?):"
                    " nothing to clone; delete this disk"
                )
            made = self._ec2.copy_snapshot(
                SourceSnapshotId=latest["SnapshotId"],
                SourceRegion=self._ec2.meta.region_name,
                Description=f"gpu-dev disk {disk.disk_name} of {disk.user_id}, a clone",
                TagSpecifications=[{"ResourceType": "snapshot", "Tags": clone_tags(disk)}],
            )
            copy = self.copied(disk) or {"SnapshotId": made["SnapshotId"], "State": "pending"}
        if copy["State"] != "completed":
            raise CloneNotReady(f"the copy {copy['SnapshotId']} is not completed yet")
        snapshot_id: str = copy["SnapshotId"]
        return snapshot_id
