"""The attach/detach controller with the EBS CSI driver's controller side, against EC2.

A volume of an `ebs.csi.aws.com` PersistentVolume (`volumeHandle`: the EBS volume id) is
attached to the EC2 instance of the node (its `providerID`, `aws:///<zone>/<instance>`) of
every pod that uses its Bound claim and has not finished, as soon as the pod is bound to
that node; it is detached once no such pod is left there (a Terminating pod keeps it until
it is deleted, after its grace period). EC2 decides as the driver's calls would: a volume
in another availability zone than the instance fails with InvalidVolume.ZoneMismatch, a
volume attached elsewhere with VolumeInUse (or, when our own pod on another node holds it,
the controller's Multi-Attach error), a missing one with NotFound; the pod then waits
(ContainerCreating) with a FailedAttachVolume event, and the attach is retried every
`retry_seconds`. moto's attach_volume checks none of this, so it is checked here first.

Fault injection: `stale_holder`, an EC2 instance outside the cluster (a node that died with
the volume still attached to it): every volume is first attached to it in EC2, so our
attach finds the volume in use and fails as EBS refuses it (VolumeInUse).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from botocore.exceptions import ClientError

from localcloud.kubernetes import events, volume_scheduling
from localcloud.kubernetes.store import ObjectStore

log = logging.getLogger("localcloud.csi")
Obj = dict[str, Any]
DRIVER = "ebs.csi.aws.com"
COMPONENT = "attachdetach-controller"
FINISHED = ("Succeeded", "Failed")
# The device names the EBS CSI driver gives attachments: /dev/xvdaa, /dev/xvdab, ...
DEVICES = [
    f"/dev/xvd{a}{b}" for a in "abcdefghijklmnopqrstuvwxyz" for b in "abcdefghijklmnopqrstuvwxyz"
]


def instance_of(node: Obj) -> str:
    return str(node["spec"].get("providerID", "")).rsplit("/", 1)[-1] or node["metadata"]["name"]


class AttachFailed(Exception):
    pass


class EbsCsiAttacher:
    def __init__(self, store: ObjectStore, ec2: Any, retry_seconds: float = 1.0):
        self.store = store
        self._ec2 = ec2
        self.retry_seconds = retry_seconds
        self._attached: dict[str, tuple[str, str]] = {}  # volume id -> (instance, device)
        self._retry_at: dict[str, float] = {}  # volume id -> when to try a failed attach again
        self._zones: dict[str, str] = {}  # instance -> its availability zone
        self._said: set[tuple[str, str]] = set()  # (pod uid, message) recorded
        self.stale_holder: str | None = None  # fault injection (module docstring)

    @property
    def attachments(self) -> int:
        return len(self._attached)

    def attached(self, volume_id: str, instance_id: str) -> bool:
        return self._attached.get(volume_id, ("", ""))[0] == instance_id

    def step(self, pods: list[Obj], nodes: dict[str, Obj], claims: Any, volumes: Any) -> None:
        users: dict[str, list[tuple[str, Obj, Obj]]] = {}  # volume id -> (instance, pod, pv)
        for pod in pods:
            node = nodes.get(pod["spec"].get("nodeName") or "")
            if node is None or pod["status"].get("phase") in FINISHED:
                continue
            for pv in volume_scheduling.bound_volumes(pod, claims, volumes):
                csi = pv["spec"].get("csi") or {}
                if csi.get("driver") == DRIVER:
                    users.setdefault(csi["volumeHandle"], []).append((instance_of(node), pod, pv))
        wanted: dict[str, tuple[str, Obj, Obj]] = {}  # volume id -> the user it goes to
        for volume_id, candidates in users.items():
            # The node it is attached to keeps it; the others' pods get the Multi-Attach error.
            where = self._attached.get(volume_id, ("", ""))[0]
            holder = next((c for c in candidates if c[0] == where), candidates[0])
            wanted[volume_id] = holder
            for instance, pod, pv in candidates:
                if instance != holder[0]:
                    self._failed(
                        pod,
                        f'Multi-Attach error for volume "{pv["metadata"]["name"]}" Volume is '
                        "already exclusively attached to one node and can't be attached to another",
                    )
        for volume_id, (instance, device) in list(self._attached.items()):
            if wanted.get(volume_id, ("",))[0] != instance:
                self._detach(volume_id, instance, device)
        for volume_id, (instance, pod, pv) in wanted.items():
            if not self.attached(volume_id, instance) and time.monotonic() >= self._retry_at.get(
                volume_id, 0.0
            ):
                self._attach(volume_id, instance, pod, pv)

    def _attach(self, volume_id: str, instance: str, pod: Obj, pv: Obj) -> None:
        name = pv["metadata"]["name"]
        if self.stale_holder is not None:
            self._held_elsewhere(volume_id, self.stale_holder)
        try:
            device = self._checked_device(volume_id, instance)
            try:
                self._ec2.attach_volume(VolumeId=volume_id, InstanceId=instance, Device=device)
            except ClientError as error:
                raise AttachFailed(
                    f"rpc error: code = Internal desc = {_describe(error)}"
                ) from None
        except AttachFailed as failure:
            self._retry_at[volume_id] = time.monotonic() + self.retry_seconds
            self._failed(pod, f'AttachVolume.Attach failed for volume "{name}" : {failure}')
            return
        self._attached[volume_id] = (instance, device)
        self._retry_at.pop(volume_id, None)
        log.info("volume %s attached to %s at %s", volume_id, instance, device)
        events.record(
            self.store,
            pod,
            "Normal",
            "SuccessfulAttachVolume",
            f'AttachVolume.Attach succeeded for volume "{name}"',
            COMPONENT,
        )

    def _checked_device(self, volume_id: str, instance: str) -> str:
        """What EC2 would refuse (moto does not), then a device name free on the instance."""
        could_not = f'ould not attach volume "{volume_id}" to node "{instance}"'
        prefix = f"rpc error: code = Internal desc = C{could_not}: c{could_not}: "
        try:
            volume = self._ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]
        except ClientError as error:
            if error.response["Error"]["Code"] == "InvalidVolume.NotFound":
                raise AttachFailed(
                    f'rpc error: code = NotFound desc = Volume "{volume_id}" not found'
                ) from None
            raise AttachFailed(prefix + _describe(error)) from None
        try:
            zone = self._zone(instance)
        except ClientError as error:
            raise AttachFailed(prefix + _describe(error)) from None
        if volume["AvailabilityZone"] != zone:
            raise AttachFailed(
                f"{prefix}InvalidVolume.ZoneMismatch: The volume '{volume_id}' is not in the "
                f"same availability zone as instance '{instance}'"
            )
        if any(a["InstanceId"] != instance for a in volume.get("Attachments") or []):
            raise AttachFailed(
                f"{prefix}VolumeInUse: {volume_id} is already attached to an instance"
            )
        taken = {device for _, device in self._attached.values()} | {
            a["Device"] for a in volume.get("Attachments") or []
        }
        return next(d for d in DEVICES if d not in taken)

    def _held_elsewhere(self, volume_id: str, holder: str) -> None:
        """The fault: the volume attached, in EC2, to an instance outside the cluster."""
        try:
            volume = self._ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0]
            if not volume.get("Attachments"):
                self._ec2.attach_volume(VolumeId=volume_id, InstanceId=holder, Device="/dev/xvdzz")
        except ClientError as error:  # gone meanwhile: our own attach says so next
            log.info("volume %s: stale attach to %s: %s", volume_id, holder, _describe(error))

    def _zone(self, instance: str) -> str:
        if instance not in self._zones:
            reservations = self._ec2.describe_instances(InstanceIds=[instance])["Reservations"]
            self._zones[instance] = reservations[0]["Instances"][0]["Placement"]["AvailabilityZone"]
        return self._zones[instance]

    def _detach(self, volume_id: str, instance: str, device: str) -> None:
        try:
            self._ec2.detach_volume(VolumeId=volume_id, InstanceId=instance, Device=device)
            log.info("volume %s detached from %s", volume_id, instance)
        except ClientError as error:  # deleted or detached behind our back: nothing to undo
            log.info("volume %s: detach from %s: %s", volume_id, instance, _describe(error))
        del self._attached[volume_id]

    def _failed(self, pod: Obj, message: str) -> None:
        said = (pod["metadata"]["uid"], message)
        if said not in self._said:
            self._said.add(said)
            events.record(self.store, pod, "Warning", "FailedAttachVolume", message, COMPONENT)


def _describe(error: ClientError) -> str:
    return f"{error.response['Error']['Code']}: {error.response['Error'].get('Message', '')}"
