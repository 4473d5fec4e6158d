"""A reservation's named disk, snapshot-first (docs/architecture.md, "Persistent disks").

Granted: `take_disk` takes the disk (one conditional statement: a reservation that loses
the race ends with the holder named) and places its volume in node 0's zone
(`_place_volume`): a new one from the disk's latest completed snapshot, or, when the
disk's data is on an existing volume newer than that snapshot (an imported disk), that
volume, attached as it is when it is available in the zone, else copied through a snapshot
of it; `check_disk` polls (and advances the copy) until the volume is available;
`provision` mounts it (`mount_home`). Every completed snapshot is recorded on the disk's
figures as it happens (`record_snapshot`). Ended (after tear down deleted the pod and the
claim): `save_disk` polls until the pod is gone and the volume detached, snapshots it and
polls the snapshot until it completes (a failed one: reason recorded on the disk, snapshot
dropped, tried again later, the volume kept); `release_disk` deletes the volume (only after
its snapshot completed; an adopted volume never mounted is left as it was found) and frees
the disk. The state machine does the waiting (Wait states), never a Lambda, with a
backoff measured from the reservation's end, and hands the disk to the sweeper after
`save_patience_seconds` (`handoff`); a pod still there after `pod_release_patience_seconds`
is deleted with no grace period, and a volume still attached is force-detached before it is
snapshotted (lifecycle/patience.py). The
volume is created with the reservation id as ClientToken and recorded on the disk's row
(`held_volume_id`); every later step acts on that volume and finds its snapshot (by the
reservation tag and the volume id) before making one.

When the execution died (stopped, `Disk not saved`, `TearDownFailed`), the sweeper calls
`save_for_the_sweeper` once a run: the same two steps, advanced as far as they go now
(snapshot requested, completed, volume deleted, freed), the state being EC2's, found through
the recorded volume and the reservation tag, so a run that crashed mid-step is simply run
again.
"""

from __future__ import annotations

import math
from typing import Any, Literal
from uuid import UUID

from gpudev.cluster import home_listing
from gpudev.cluster.names import Names
from gpudev.cluster.volumes import HomeDisk, PersistentVolumes, claim, persistent_volume
from gpudev.disks.ebs import is_adopted
from gpudev.disks.volumes import DiskRef, VolumeTokenMismatch
from gpudev.lifecycle.patience import SavePatience, next_wait, pod_overdue
from gpudev.lifecycle.payloads import (
    CheckDisk,
    CheckDiskOutput,
    ReleaseDisk,
    ReleaseDiskOutput,
    SaveDisk,
    SaveDiskOutput,
    TakeDisk,
    TakeDiskOutput,
)
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.lifecycle.taxonomy import Transient
from gpudev.models import Disk, Reservation, TimelineEntry
from gpudev.observability import logger
from gpudev.repositories.disk_holds import DiskHoldsRepository

_BUSY_ATTACHMENT = frozenset({"attaching", "attached", "detaching", "busy"})


def _record(lc: Lifecycle, ref: DiskRef, what: str, key: str) -> None:
    """A timeline entry about the disk (kind disk), once per key: a task run again, or the
    sweeper taking over a step, records nothing twice (migration 0036)."""
    entry = TimelineEntry("disk", f"disk {ref.disk_name}: {what}", key)
    lc.rows.record_events(ref.reservation_id, [entry])


def _ref(reservation: Reservation, disk: Disk) -> DiskRef:
    return DiskRef(
        disk.user_id,
        disk.disk_name,
        reservation.reservation_id,
        tagged_name=disk.tagged_name,
        volume_id=disk.held_volume_id,
    )


def take_disk(lc: Lifecycle, task: TakeDisk) -> TakeDiskOutput:
    reservation = lc.reservation(task.reservation_id)
    if reservation.cancel_requested_at is not None:
        return TakeDiskOutput(outcome="cancel")
    if reservation.disk_name is None:
        return TakeDiskOutput(outcome="none")
    holds = DiskHoldsRepository(lc.conn)
    disk = holds.take(reservation.reservation_id, reservation.user_id, reservation.disk_name)
    if disk is None:
        return TakeDiskOutput(outcome="in_use", reason=_not_taken(holds, reservation))
    outcome = _place_volume(lc, holds, reservation, disk)
    if isinstance(outcome, str):  # the reservation ends with it (the hold is let go then)
        return TakeDiskOutput(outcome="in_use", reason=outcome)
    return TakeDiskOutput(outcome="creating")


def _node_zone(lc: Lifecycle, reservation: Reservation) -> str:
    node = lc.rows.placements(reservation.reservation_id)[0].node_name
    return PersistentVolumes(lc.api_client).zone_of(node)


def _place_volume(
    lc: Lifecycle, holds: DiskHoldsRepository, reservation: Reservation, disk: Disk
) -> dict[str, Any] | str | None:
    """The held disk's volume in node 0's zone, one step further each call (take, then
    every check): the volume, None while a snapshot of the disk's existing volume is
    pending, or why it cannot be had. Snapshot-first: the disk's existing volume is only
    deleted once a snapshot of it completed and the volume made from it is recorded."""
    ref = _ref(reservation, disk)
    volume = lc.volumes.volume(ref)
    if volume is None:
        zone = _node_zone(lc, reservation)
        source = None
        existing = lc.volumes.current(ref, disk.ebs_volume_id)
        if existing is not None:
            outcome = _from_existing(lc, holds, reservation, ref, existing, zone)
            if outcome is None or isinstance(outcome, str):
                return outcome
            how, found = outcome
            if how == "attach":
                volume = found
            else:
                source = found
        if volume is None:
            try:
                volume = lc.volumes.create_volume(ref, zone, disk.size_gb, source)
            except VolumeTokenMismatch as exc:
                raise Transient(str(exc)) from exc  # retried with backoff; then it is listed
            logger.info(
                "disk volume created",
                extra={
                    "volume": volume["VolumeId"],
                    "zone": zone,
                    "from": volume.get("SnapshotId"),
                },
            )
            source_id = volume.get("SnapshotId")
            made = f" from snapshot {source_id}" if source_id else " (empty)"
            _record(
                lc,
                ref,
                f"volume {volume['VolumeId']} being made in {zone}{made}",
                f"volume:{volume['VolumeId']}",
            )
    if disk.held_volume_id != volume["VolumeId"]:
        holds.record_volume(reservation.reservation_id, volume["VolumeId"])
    _drop_superseded(lc, holds, ref, keep=volume["VolumeId"])
    return volume


def _from_existing(
    lc: Lifecycle,
    holds: DiskHoldsRepository,
    reservation: Reservation,
    ref: DiskRef,
    existing: dict[str, Any],
    zone: str,
) -> tuple[Literal["attach", "copy"], dict[str, Any]] | str | None:
    """The disk's data is on `existing`: adopt it. Available in the node's zone: attach it;
    elsewhere: copy it, from its snapshot once completed (None while pending); attached to
    something else, or its snapshot failed: the reason."""
    volume_id = existing["VolumeId"]
    if existing["State"] != "available":
        attached = ", ".join(a.get("InstanceId", "?") for a in existing.get("Attachments", []))
        return (
            f"the disk's volume {volume_id} is in use (attached to {attached or 'an instance'}),"
            " not by gpu-dev; detach it, then reserve again"
        )
    lc.volumes.adopt(ref, volume_id)
    if existing["AvailabilityZone"] == zone:
        logger.info("disk volume attached as it is", extra={"volume": volume_id, "zone": zone})
        _record(lc, ref, f"its volume {volume_id} taken as it is ({zone})", f"volume:{volume_id}")
        return "attach", existing
    snapshot = lc.volumes.snapshot(ref, volume_id)
    if snapshot is None:
        snapshot = lc.volumes.create_snapshot(ref, volume_id)
        holds.snapshot_started(reservation.reservation_id)
        logger.info(
            "disk volume in another zone: snapshot started",
            extra={"volume": volume_id, "from": existing["AvailabilityZone"], "to": zone},
        )
        _record(
            lc,
            ref,
            f"snapshot {snapshot['SnapshotId']} of volume {volume_id} started (to copy it "
            f"from {existing['AvailabilityZone']} to {zone})",
            f"snapshot_started:{snapshot['SnapshotId']}",
        )
    if snapshot["State"] == "completed":
        _record_completed(lc, holds, ref, snapshot)
        return "copy", snapshot
    if snapshot["State"] != "error":
        return None
    lc.volumes.delete_snapshot(snapshot["SnapshotId"])
    holds.snapshot_dropped(reservation.reservation_id)
    reason = (
        f"the disk's volume {volume_id} is in {existing['AvailabilityZone']}, not in {zone}, and"
        f" its snapshot {snapshot['SnapshotId']} failed"
        f" ({snapshot.get('StateMessage') or 'no message'}); the volume is kept as it was:"
        " reserve again"
    )
    _record(lc, ref, reason, f"snapshot_failed:{snapshot['SnapshotId']}")
    return reason


def _record_completed(
    lc: Lifecycle, holds: DiskHoldsRepository, ref: DiskRef, snapshot: dict[str, Any]
) -> None:
    holds.snapshot_completed(ref.reservation_id, snapshot["StartTime"], snapshot.get("VolumeSize"))
    snapshot_id = snapshot["SnapshotId"]
    _record(lc, ref, f"snapshot {snapshot_id} completed", f"snapshot_completed:{snapshot_id}")


def _drop_superseded(
    lc: Lifecycle, holds: DiskHoldsRepository, ref: DiskRef, keep: str | None
) -> None:
    """The existing volumes this reservation adopted (other than `keep`, the one it
    mounts): one a snapshot of which completed is deleted (its data is in that snapshot, the
    source of the volume made for the reservation); any other is left as it was found,
    and the reservation's unfinished snapshot of it deleted."""
    for adopted in lc.volumes.adopted(ref):
        if adopted["VolumeId"] == keep:
            continue
        snapshot = lc.volumes.snapshot(ref, adopted["VolumeId"])
        if snapshot is not None and snapshot["State"] == "completed":
            lc.volumes.delete_volume(adopted["VolumeId"])
            logger.info("copied disk volume deleted", extra={"volume": adopted["VolumeId"]})
        elif snapshot is not None and keep is None:  # the reservation ends: nothing left
            lc.volumes.delete_snapshot(snapshot["SnapshotId"])
            holds.snapshot_dropped(ref.reservation_id)


def _not_taken(holds: DiskHoldsRepository, reservation: Reservation) -> str:
    name = reservation.disk_name
    current = holds.named(reservation.user_id, name or "")
    if current is None:
        return f"disk {name!r} no longer exists"
    if current.is_deleted:
        return f"disk {name!r} was deleted"
    return (
        f"disk {name!r} is in use by reservation {current.reservation_id}, "
        "which took it first; reserve again once it has ended or with another disk"
    )


def check_disk(lc: Lifecycle, task: CheckDisk) -> CheckDiskOutput:
    reservation = lc.reservation(task.reservation_id)
    if reservation.cancel_requested_at is not None:
        return CheckDiskOutput(outcome="cancel")
    holds = DiskHoldsRepository(lc.conn)
    disk = holds.held_by(reservation.reservation_id)
    if disk is None:
        return CheckDiskOutput(outcome="failed", reason="the disk's volume was not created")
    volume = _place_volume(lc, holds, reservation, disk)
    if isinstance(volume, str):
        return CheckDiskOutput(outcome="failed", reason=volume)
    if volume is None or volume["State"] == "creating":
        return CheckDiskOutput(outcome="waiting")
    ref, volume_id = _ref(reservation, disk), volume["VolumeId"]
    if volume["State"] == "available":
        _record(lc, ref, f"volume {volume_id} available", f"volume_available:{volume_id}")
        return CheckDiskOutput(outcome="ready")
    reason = f"the disk's volume {volume_id} is {volume['State']}"
    _record(lc, ref, reason, f"volume_failed:{volume_id}")
    return CheckDiskOutput(outcome="failed", reason=reason)


def mount_home(lc: Lifecycle, reservation: Reservation) -> str | None:
    """The PersistentVolume and claim of the reservation's disk; the claim's name, or None
    without a disk."""
    disk = DiskHoldsRepository(lc.conn).held_by(reservation.reservation_id)
    if disk is None:
        return None
    volume = lc.volumes.volume(_ref(reservation, disk))
    if volume is None or volume["State"] != "available":
        raise RuntimeError("the disk's volume is not available")
    home = HomeDisk(volume["VolumeId"], volume["AvailabilityZone"], volume["Size"])
    PersistentVolumes(lc.api_client).create(
        persistent_volume(reservation, lc.namespace_of(reservation), home)
    )
    lc.objects(reservation).create(claim(reservation, home))
    return Names.of(reservation).home


def save_patience(lc: Lifecycle) -> SavePatience:
    settings = lc.settings
    return SavePatience(
        base_seconds=settings.ready_poll_seconds,
        cap_seconds=settings.save_wait_max_seconds,
        patience_seconds=settings.save_patience_seconds,
        pod_patience_seconds=settings.pod_release_patience_seconds,
    )


def _since_end(lc: Lifecycle, reservation: Reservation) -> float:
    ended = reservation.reservation_ended
    return 0.0 if ended is None else lc.clock() - ended.timestamp()


def save_disk(lc: Lifecycle, task: SaveDisk) -> SaveDiskOutput:
    holds = DiskHoldsRepository(lc.conn)
    disk = holds.held_by(task.reservation_id)
    poll = lc.settings.ready_poll_seconds
    if disk is None:
        return SaveDiskOutput(outcome="none", seconds=poll)
    reservation = lc.reservation(task.reservation_id)
    patience = save_patience(lc)
    elapsed = _since_end(lc, reservation)

    def not_yet(detail: str) -> SaveDiskOutput:
        outcome, seconds = next_wait(elapsed, patience)
        if outcome == "handoff":
            logger.warning(
                "disk not saved in time: left to the sweeper",
                extra={"reservation_id": str(reservation.reservation_id), "waiting": detail},
            )
        return SaveDiskOutput(outcome=outcome, seconds=seconds, detail=detail)

    ref = _ref(reservation, disk)
    cluster = lc.objects(reservation)
    pods = cluster.pods(str(reservation.reservation_id))
    if pods:  # first, whatever else: a pod held by the listing's finalizer is let go here
        _record_listing(lc, holds, reservation, pods)
        if pod_overdue(elapsed, patience):
            _force_release(lc, reservation, pods)
            return not_yet("the pod did not stop: deleted with no grace period")
        return not_yet("the pod is stopping")
    volume = lc.volumes.volume(ref)
    if volume is None or reservation.pod_name is None:
        # No volume (never made, or deleted after its snapshot), or never mounted by a pod:
        # the latest snapshot still holds everything.
        return SaveDiskOutput(outcome="saved", seconds=poll)
    busy = any(a.get("State") in _BUSY_ATTACHMENT for a in volume.get("Attachments", []))
    if busy:
        if not pod_overdue(elapsed, patience):
            return not_yet("the volume is detaching")
        # Past the pod patience a volume still attached (a hung node, whose containers may
        # still run) is forced off first, then snapshotted once detached: the snapshot holds
        # everything that reached the volume, and nothing reaches it after. Crash-consistent,
        # as after a power cut.
        lc.volumes.force_detach(volume)
        return not_yet("the volume is being detached by force")
    if volume["State"] == "error":  # nothing to snapshot: the last snapshot holds the disk
        logger.warning("disk volume in error: not saved", extra={"volume": volume["VolumeId"]})
        return SaveDiskOutput(outcome="saved", seconds=poll)
    snapshot = lc.volumes.snapshot(ref, volume["VolumeId"])
    if snapshot is None:
        snapshot = lc.volumes.create_snapshot(ref, volume["VolumeId"])
        holds.snapshot_started(reservation.reservation_id)
        logger.info(
            "disk snapshot started",
            extra={"snapshot": snapshot["SnapshotId"], "attached": busy},
        )
        _record(
            lc,
            ref,
            f"snapshot {snapshot['SnapshotId']} of volume {volume['VolumeId']} started "
            "(saving the disk)",
            f"snapshot_started:{snapshot['SnapshotId']}",
        )
    if snapshot["State"] == "completed":
        _record_completed(lc, holds, ref, snapshot)
        return SaveDiskOutput(outcome="saved", seconds=poll)
    if snapshot["State"] != "error":
        return not_yet("snapshot in progress")
    reason = (
        f"snapshot {snapshot['SnapshotId']} of volume {volume['VolumeId']} failed"
        f" ({snapshot.get('StateMessage') or 'no message'}); the volume is kept and the"
        " snapshot will be tried again"
    )
    holds.record_error(reservation.reservation_id, reason)
    _record(lc, ref, reason, f"snapshot_failed:{snapshot['SnapshotId']}")
    lc.volumes.delete_snapshot(snapshot["SnapshotId"])
    holds.snapshot_dropped(reservation.reservation_id)
    logger.warning("disk snapshot failed", extra={"reason": reason})
    retry = max(1, math.ceil(lc.schedule.minutes(lc.settings.fault_retry_minutes)))
    return SaveDiskOutput(outcome="failed", seconds=retry, detail=reason)


def _force_release(lc: Lifecycle, reservation: Reservation, pods: list[Any]) -> None:
    """Pods that did not go within the patience: their node is gone or hung, so no kubelet
    will confirm the deletion. The listing's finalizer is removed (the listing is lost: a
    warning says so) and the pod deleted with no grace period, as `kubectl delete --force`."""
    from kubernetes.client.exceptions import ApiException

    cluster = lc.objects(reservation)
    for pod in pods:
        name = pod["metadata"]["name"]
        if home_listing.holds_listing(pod):
            try:
                cluster.replace(home_listing.without_finalizer(pod))
            except ApiException as exc:
                if exc.status not in (404, 409):
                    raise
        cluster.force_delete_pod(name, pod["metadata"].get("uid"))
        logger.warning(
            "pod did not stop within the patience: deleted with no grace period",
            extra={"pod": name, "node": pod.get("spec", {}).get("nodeName")},
        )


def _record_listing(
    lc: Lifecycle, holds: DiskHoldsRepository, reservation: Reservation, pods: list[Any]
) -> None:
    """Pod 0 stopped: record the listing its preStop hook left in its termination message,
    then let the pod go (cluster/home_listing.py). A write that conflicts (the kubelet
    updated the pod meanwhile) is tried again at the next poll."""
    from kubernetes.client.exceptions import ApiException

    for pod in pods:
        if not (home_listing.holds_listing(pod) and home_listing.stopped(pod)):
            continue
        listing = home_listing.listing_of(pod)
        if listing is not None:
            holds.record_listing(reservation.reservation_id, listing)
        try:
            lc.objects(reservation).replace(home_listing.without_finalizer(pod))
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise
        found = listing is not None
        logger.info("disk listing read", extra={"bytes": len(listing or ""), "found": found})


def release_disk(lc: Lifecycle, task: ReleaseDisk) -> ReleaseDiskOutput:
    holds = DiskHoldsRepository(lc.conn)
    disk = holds.held_by(task.reservation_id)
    if disk is None:
        return ReleaseDiskOutput(outcome="released")
    reservation = lc.reservation(task.reservation_id)
    ref = _ref(reservation, disk)
    volume = lc.volumes.volume(ref)
    if volume is not None:
        snapshot = lc.volumes.snapshot(ref, volume["VolumeId"])
        saved = snapshot is not None and snapshot["State"] == "completed"
        mounted = reservation.pod_name is not None
        if is_adopted(volume) and not saved:
            # The disk's existing volume holds its data: never deleted without a snapshot.
            # Never mounted, it is left as it was found; mounted, it must be saved first.
            if mounted:
                raise RuntimeError(f"volume {volume['VolumeId']} has no completed snapshot to keep")
        else:
            if mounted and not saved and volume["State"] != "error":
                raise RuntimeError(f"volume {volume['VolumeId']} has no completed snapshot to keep")
            if any(a.get("State") in _BUSY_ATTACHMENT for a in volume.get("Attachments", [])):
                # Never forced here: deleted once detached (the task's retries wait).
                raise Transient(f"volume {volume['VolumeId']} is still detaching")
            lc.volumes.delete_volume(volume["VolumeId"])
    _drop_superseded(lc, holds, ref, keep=None)
    holds.free(reservation.reservation_id)
    logger.info("disk freed", extra={"disk": disk.disk_name, "size_gb": disk.size_gb})
    return ReleaseDiskOutput(outcome="released")


SweptDisk = Literal["none", "waiting", "failed", "freed"]


def save_for_the_sweeper(lc: Lifecycle, reservation_id: UUID) -> SweptDisk:
    """One step of saving the disk held by a reservation whose execution died: delete its
    PersistentVolume (the sweeper deletes the namespaced claim and pods), then `save_disk`
    and, once saved, `release_disk`. Never waits: the next run looks again. The caller
    makes sure no execution is running for `reservation_id`."""
    PersistentVolumes(lc.api_client).delete_all(str(reservation_id))
    saved = save_disk(lc, SaveDisk(reservation_id=reservation_id))
    if saved.outcome == "handoff":  # the sweeper has no patience to run out of: it waits
        return "waiting"
    if saved.outcome != "saved":
        return saved.outcome
    try:
        release_disk(lc, ReleaseDisk(reservation_id=reservation_id))
    except Transient:  # a forced detach under way: the next run deletes the volume
        return "waiting"
    return "freed"
