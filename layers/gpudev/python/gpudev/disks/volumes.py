"""A held disk's EBS side, snapshot-first (reference §5.11): between reservations the data
lives in the disk's latest completed snapshot; a granted reservation gets a fresh gp3 volume
from it (empty on first use) in its node's zone, and on its ending the volume is
snapshotted, then deleted once the snapshot completed.

Everything is found by tags before anything is made, so a task that crashed mid-step and is
run again finds the volume or snapshot it made instead of making another. The tags are the
ones the EBS disk reconciler reads (`gpudev/disks/plan.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from botocore.exceptions import ClientError

USER_TAG = "gpu-dev-user"
DISK_TAG = "disk-name"
RESERVATION_TAG = "reservation-id"
DEFAULT_SIZE_GB = 1024
# Volumes and snapshots that still count: a deleted one, or a failed snapshot handled
# already (deleted after its reason was recorded), does not.
_LIVE_VOLUME = ["creating", "available", "in-use"]
_LIVE_SNAPSHOT = ["pending", "completed", "error"]


@dataclass(frozen=True)
class DiskRef:
    """Which disk, for whom: the tags of everything made for it."""

    user_id: str
    disk_name: str
    reservation_id: UUID

    def tags(self) -> list[dict[str, str]]:
        return [
            {"Key": USER_TAG, "Value": self.user_id},
            {"Key": DISK_TAG, "Value": self.disk_name},
            {"Key": RESERVATION_TAG, "Value": str(self.reservation_id)},
            {"Key": "Name", "Value": f"gpu-dev-{self.user_id}-{self.disk_name}"},
        ]

    def of_reservation(self) -> list[dict[str, Any]]:
        return [{"Name": f"tag:{RESERVATION_TAG}", "Values": [str(self.reservation_id)]}]

    def of_disk(self) -> list[dict[str, Any]]:
        return [
            {"Name": f"tag:{USER_TAG}", "Values": [self.user_id]},
            {"Name": f"tag:{DISK_TAG}", "Values": [self.disk_name]},
        ]


class DiskVolumes:
    def __init__(self, ec2: Any):
        self._ec2 = ec2

    def volume(self, disk: DiskRef) -> dict[str, Any] | None:
        """The reservation's volume of this disk, if it made one and it is not deleted."""
        volumes = self._ec2.describe_volumes(
            Filters=[*disk.of_reservation(), {"Name": "status", "Values": _LIVE_VOLUME}]
        )["Volumes"]
        mine = [v for v in volumes if _tag(v, DISK_TAG) == disk.disk_name]
        return mine[0] if mine else None

    def latest_snapshot(self, disk: DiskRef) -> dict[str, Any] | None:
        """The disk's newest completed snapshot, whichever reservation made it."""
        snapshots = self._ec2.describe_snapshots(
            OwnerIds=["self"],
            Filters=[*disk.of_disk(), {"Name": "status", "Values": ["completed"]}],
        )["Snapshots"]
        return max(snapshots, key=lambda s: s["StartTime"], default=None)

    def create_volume(self, disk: DiskRef, zone: str, size_gb: int | None) -> dict[str, Any]:
        """A gp3 volume in `zone`, from the latest completed snapshot (empty on first use)."""
        source = self.latest_snapshot(disk)
        size = max(size_gb or DEFAULT_SIZE_GB, source["VolumeSize"] if source else 0)
        extra = {"SnapshotId": source["SnapshotId"]} if source else {}
        created: dict[str, Any] = self._ec2.create_volume(
            AvailabilityZone=zone,
            Size=size,
            VolumeType="gp3",
            TagSpecifications=[{"ResourceType": "volume", "Tags": disk.tags()}],
            **extra,
        )
        return created

    def snapshot(self, disk: DiskRef) -> dict[str, Any] | None:
        """The snapshot this reservation made of the disk (not one handled as failed)."""
        snapshots = self._ec2.describe_snapshots(
            OwnerIds=["self"],
            Filters=[*disk.of_reservation(), {"Name": "status", "Values": _LIVE_SNAPSHOT}],
        )["Snapshots"]
        mine = [s for s in snapshots if _tag(s, DISK_TAG) == disk.disk_name]
        return max(mine, key=lambda s: s["StartTime"], default=None)

    def create_snapshot(self, disk: DiskRef, volume_id: str) -> dict[str, Any]:
        created: dict[str, Any] = self._ec2.create_snapshot(
            VolumeId=volume_id,
            Description=f"gpu-dev disk {disk.disk_name} of {disk.user_id}",
            TagSpecifications=[{"ResourceType": "snapshot", "Tags": disk.tags()}],
        )
        return created

    def delete_snapshot(self, snapshot_id: str) -> None:
        self._delete(self._ec2.delete_snapshot, "InvalidSnapshot.NotFound", SnapshotId=snapshot_id)

    def delete_volume(self, volume_id: str) -> None:
        self._delete(self._ec2.delete_volume, "InvalidVolume.NotFound", VolumeId=volume_id)

    @staticmethod
    def _delete(call: Any, gone: str, **kwargs: str) -> None:
        try:
            call(**kwargs)
        except ClientError as exc:  # gone already: what we wanted
            if exc.response.get("Error", {}).get("Code") != gone:
                raise


def _tag(resource: dict[str, Any], key: str) -> str | None:
    return next((t["Value"] for t in resource.get("Tags", []) if t["Key"] == key), None)
