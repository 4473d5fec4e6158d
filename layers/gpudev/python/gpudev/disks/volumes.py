"""A held disk's EBS side, snapshot-first (reference §5.11): between reservations the data
lives in the disk's latest completed snapshot; a granted reservation gets a fresh gp3 volume
from it (empty on first use) in its node's zone, and on its ending the volume is
snapshotted, then deleted once the snapshot completed.

The volume is created with the reservation id as `ClientToken`, so a take retried after
EC2 made the volume gets the same volume back (EC2's idempotency; describe is eventually
consistent, so a search by tags alone could miss it), and its id is recorded on the disk's
row (`disks.held_volume_id`): every later step acts on that volume, not on whatever a
search lists first. Snapshots are found by the reservation tag and that volume's id. The
disk's previous snapshots are found by the user tag and either name tag (`disk_name`,
older `disk-name`), under the disk's name or the name its tags still carry while a rename
has not reached them (`tagged_name`). The tag vocabulary is `gpudev/disks/ebs.py`'s.

A disk whose data is on an existing volume (imported by the reconciler from the system this
one replaces, with no snapshot, or none newer than the volume) is taken from that volume
(`current`): the reservation adopts it (`adopt`: tagged with the reservation and
`gpu-dev-adopted-by`) and attaches it when it is available in the node's zone, or snapshots
it and makes its volume from that snapshot (`create_volume(..., source=)`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from botocore.exceptions import ClientError

from gpudev.disks.ebs import (
    ADOPTED_TAG,
    RESERVATION_TAG,
    USER_TAG,
    disk_name_of,
    disk_tags,
    is_adopted,
    tags_of,
    volume_rank,
)

DEFAULT_SIZE_GB = 1024
# Volumes and snapshots that still count: a deleted one, or a failed snapshot handled
# already (deleted after its reason was recorded), does not. A volume in `error` counts: it
# is the reservation's to delete (it holds nothing: the disk's data is in its snapshots).
_LIVE_VOLUME = ["creating", "available", "in-use", "error"]


class VolumeTokenMismatch(Exception):
    """EC2 made a volume for this reservation's ClientToken with other parameters (a zone,
    size or source snapshot that changed since), and no volume tagged with the reservation
    is listed yet (DescribeVolumes is eventually consistent): try again later."""


_LIVE_SNAPSHOT = ["pending", "completed", "error"]


@dataclass(frozen=True)
class DiskRef:
    """Which disk, for whom: the tags of everything made for it, the names its resources
    may carry, and the volume made for the reservation once recorded."""

    user_id: str
    disk_name: str
    reservation_id: UUID
    tagged_name: str | None = None
    volume_id: str | None = None

    @property
    def names(self) -> set[str]:
        return {self.disk_name} | ({self.tagged_name} if self.tagged_name else set())

    def tags(self) -> list[dict[str, str]]:
        return disk_tags(self.user_id, self.disk_name, str(self.reservation_id))

    def is_ours(self, resource: dict[str, Any]) -> bool:
        tags = tags_of(resource)
        return tags.get(USER_TAG) == self.user_id and disk_name_of(tags) in self.names

    def of_reservation(self) -> list[dict[str, Any]]:
        return [{"Name": f"tag:{RESERVATION_TAG}", "Values": [str(self.reservation_id)]}]

    def of_user(self) -> list[dict[str, Any]]:
        return [{"Name": f"tag:{USER_TAG}", "Values": [self.user_id]}]


class DiskVolumes:
    def __init__(self, ec2: Any):
        self._ec2 = ec2

    def volume(self, disk: DiskRef) -> dict[str, Any] | None:
        """The reservation's volume of this disk, if it is not deleted: the recorded one, or
        before it is recorded the one it made (tagged with the reservation, not adopted)."""
        if disk.volume_id is not None:
            try:
                volumes = self._ec2.describe_volumes(VolumeIds=[disk.volume_id])["Volumes"]
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "InvalidVolume.NotFound":
                    raise
                return None
            live = [v for v in volumes if v["State"] in _LIVE_VOLUME]
            return live[0] if live else None
        volumes = self._ec2.describe_volumes(
            Filters=[*disk.of_reservation(), {"Name": "status", "Values": _LIVE_VOLUME}]
        )["Volumes"]
        mine = sorted(
            (v for v in volumes if disk.is_ours(v) and not is_adopted(v)),
            key=lambda v: v["CreateTime"],
        )
        return mine[0] if mine else None

    def current(self, disk: DiskRef, recorded: str | None) -> dict[str, Any] | None:
        """The disk's existing volume, when the disk's data is on it rather than in its
        snapshots: the disk's volume (`volume_rank`: the one its row records, else the
        newest) among those available or attached, if the disk has no completed snapshot,
        or its newest is of that volume, or older than it."""
        volumes = self._ec2.describe_volumes(
            Filters=[*disk.of_user(), {"Name": "status", "Values": ["available", "in-use"]}]
        )["Volumes"]
        mine = sorted(
            (v for v in volumes if disk.is_ours(v)),
            key=lambda v: volume_rank(v, (), {recorded} if recorded else ()),
        )
        if not mine:
            return None
        volume: dict[str, Any] = mine[0]
        newest = self.latest_snapshot(disk)
        if (
            newest is None
            or newest.get("VolumeId") == volume["VolumeId"]
            or volume["CreateTime"] > newest["StartTime"]
        ):
            return volume
        return None

    def adopt(self, disk: DiskRef, volume_id: str) -> None:
        """Tag the disk's existing volume as the reservation's (what lets the reservation
        snapshot it and, once a snapshot of it completed, delete it) and as adopted."""
        reservation = str(disk.reservation_id)
        self._ec2.create_tags(
            Resources=[volume_id],
            Tags=[
                {"Key": RESERVATION_TAG, "Value": reservation},
                {"Key": ADOPTED_TAG, "Value": reservation},
            ],
        )

    def adopted(self, disk: DiskRef) -> list[dict[str, Any]]:
        """The disk's existing volumes this reservation adopted, not deleted."""
        volumes = self._ec2.describe_volumes(
            Filters=[
                *disk.of_reservation(),
                {"Name": f"tag:{ADOPTED_TAG}", "Values": [str(disk.reservation_id)]},
                {"Name": "status", "Values": _LIVE_VOLUME},
            ]
        )["Volumes"]
        return [v for v in volumes if disk.is_ours(v)]

    def latest_snapshot(self, disk: DiskRef) -> dict[str, Any] | None:
        """The disk's newest completed snapshot, whichever reservation made it."""
        paginator = self._ec2.get_paginator("describe_snapshots")
        pages = paginator.paginate(
            OwnerIds=["self"],
            Filters=[*disk.of_user(), {"Name": "status", "Values": ["completed"]}],
        )
        mine = [s for page in pages for s in page["Snapshots"] if disk.is_ours(s)]
        return max(mine, key=lambda s: s["StartTime"], default=None)

    def create_volume(
        self,
        disk: DiskRef,
        zone: str,
        size_gb: int | None,
        source: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A gp3 volume in `zone`, from `source` (a completed snapshot) or else the latest
        completed snapshot (empty on first use)."""
        source = source or self.latest_snapshot(disk)
        size = max(size_gb or DEFAULT_SIZE_GB, source["VolumeSize"] if source else 0)
        extra = {"SnapshotId": source["SnapshotId"]} if source else {}
        try:
            created: dict[str, Any] = self._ec2.create_volume(
                AvailabilityZone=zone,
                Size=size,
                VolumeType="gp3",
                TagSpecifications=[{"ResourceType": "volume", "Tags": disk.tags()}],
                ClientToken=str(disk.reservation_id),
                **extra,
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "IdempotentParameterMismatch":
                raise
            # A retried take whose first try made the volume: that volume is the one; until
            # it is listed, say so.
            existing = self.volume(
                DiskRef(
                    disk.user_id, disk.disk_name, disk.reservation_id, tagged_name=disk.tagged_name
                )
            )
            if existing is not None:
                return existing
            raise VolumeTokenMismatch(
                f"EC2 already made a volume for reservation {disk.reservation_id} with other"
                f" parameters than {size} GB in {zone} from"
                f" {source['SnapshotId'] if source else 'no snapshot'}, and it is not listed"
                " yet; the take is tried again"
            ) from exc
        return created

    def snapshot(self, disk: DiskRef, volume_id: str) -> dict[str, Any] | None:
        """The snapshot this reservation made of its volume (not one handled as failed)."""
        snapshots = self._ec2.describe_snapshots(
            OwnerIds=["self"],
            Filters=[
                *disk.of_reservation(),
                {"Name": "volume-id", "Values": [volume_id]},
                {"Name": "status", "Values": _LIVE_SNAPSHOT},
            ],
        )["Snapshots"]
        mine = [s for s in snapshots if disk.is_ours(s)]
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

    def force_detach(self, volume: dict[str, Any]) -> None:
        """Detach a volume whose instance never let it go (a hung node), forced: used only
        past the pod patience, before the volume is snapshotted (lifecycle/disk.py
        `save_disk`)."""
        for attachment in volume.get("Attachments", []):
            if attachment.get("State") == "detaching":
                continue
            self._ec2.detach_volume(
                VolumeId=volume["VolumeId"], InstanceId=attachment["InstanceId"], Force=True
            )

    def delete_volume(self, volume_id: str) -> None:
        self._delete(self._ec2.delete_volume, "InvalidVolume.NotFound", VolumeId=volume_id)

    @staticmethod
    def _delete(call: Any, gone: str, **kwargs: str) -> None:
        try:
            call(**kwargs)
        except ClientError as exc:  # gone already: what we wanted
            if exc.response.get("Error", {}).get("Code") != gone:
                raise
