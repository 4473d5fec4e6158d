"""The EFS CSI driver's node side (efs-csi-node, NodePublishVolume) against moto's EFS.

A pod using a Bound claim on an `efs.csi.aws.com` PersistentVolume (`volumeHandle`
`fs-…[:subpath]:[fsap-…]`) has it mounted before its containers start, on every node, any
number of pods at once (EFS is ReadWriteMany: nothing to attach). The mount succeeds only
when what the real driver and efs-utils need is there: the file system exists; the access
point exists and is on that file system; the file system has a mount target in the node's
availability zone, in the node's VPC (efs-utils mounts the zone's mount target through its
DNS name, which resolves in that VPC only); and, when the file system's policy denies
requests without TLS or allows no anonymous client, the `tls` and `iam` mount options.
Otherwise the kubelet records a FailedMount event with the driver's reason and the pod
stays ContainerCreating; the check is tried again every `retry_seconds`.

A mount is read-only, as the kubelet asks NodePublishVolume for it, when the
PersistentVolume's `csi.readOnly` or the pod volume's `persistentVolumeClaim.readOnly` says
so (`read_only` holds those mounts: tests read it).
"""

from __future__ import annotations

import json
import time
from typing import Any

from botocore.exceptions import ClientError

from localcloud.kubernetes.csi_attacher import instance_of

Obj = dict[str, Any]
DRIVER = "efs.csi.aws.com"
ZONE_LABEL = "topology.kubernetes.io/zone"


class EfsCsiNode:
    def __init__(self, efs: Any, ec2: Any, retry_seconds: float = 1.0):
        self._efs = efs
        self._ec2 = ec2
        self.retry_seconds = retry_seconds
        # (pod uid, volume handle) mounted: what each pod sees (tests read it)
        self.mounted: dict[str, set[str]] = {}
        self._retry_at: dict[tuple[str, str], float] = {}
        self._last: dict[tuple[str, str], str] = {}  # the failed check's reason, till retried
        self._vpcs: dict[str, str] = {}  # instance -> its VPC
        self.read_only: set[tuple[str, str]] = set()  # (pod uid, volume handle) mounted ro

    def mount_problem(self, pod: Obj, node: Obj, pv: Obj) -> str | None:
        """Why the volume cannot be mounted for the pod on the node now, or None once it is
        mounted. A failed check waits `retry_seconds` (it answers the same meanwhile)."""
        uid = pod["metadata"]["uid"]
        handle = pv["spec"]["csi"]["volumeHandle"]
        if handle in self.mounted.get(uid, set()):
            return None
        key = (uid, handle)
        if key in self._last and time.monotonic() < self._retry_at.get(key, 0.0):
            return self._last[key]
        problem = self._problem(pv, node)
        if problem is not None:
            self._retry_at[key] = time.monotonic() + self.retry_seconds
            self._last[key] = (
                f'MountVolume.SetUp failed for volume "{pv["metadata"]["name"]}" : '
                f"rpc error: code = Internal desc = {problem}"
            )
            return self._last[key]
        self._retry_at.pop(key, None)
        self._last.pop(key, None)
        self.mounted.setdefault(uid, set()).add(handle)
        if _read_only(pod, pv):
            self.read_only.add(key)
        return None

    def forget(self, uid: str) -> None:
        """The pod is gone: its mounts with it."""
        self.mounted.pop(uid, None)
        self.read_only = {k for k in self.read_only if k[0] != uid}
        for key in [k for k in self._retry_at if k[0] == uid]:
            self._retry_at.pop(key, None)
            self._last.pop(key, None)

    def _problem(self, pv: Obj, node: Obj) -> str | None:
        handle = pv["spec"]["csi"]["volumeHandle"]
        parts = handle.split(":")
        if len(parts) > 3 or not parts[0].startswith("fs-"):
            return f"Invalid volume handle {handle!r}: want fs-id[:subpath[:fsap-id]]"
        file_system_id = parts[0]
        access_point_id = parts[2] if len(parts) == 3 else ""
        try:
            file_system = self._efs.describe_file_systems(FileSystemId=file_system_id)
        except ClientError as error:
            return f"Failed to find file system {file_system_id}: {_describe(error)}"
        assert file_system["FileSystems"]
        if access_point_id:
            try:
                found = self._efs.describe_access_points(AccessPointId=access_point_id)
            except ClientError as error:
                return f"Failed to find access point {access_point_id}: {_describe(error)}"
            point = found["AccessPoints"][0]
            if point["FileSystemId"] != file_system_id:
                return (
                    f"Access point {access_point_id} belongs to file system "
                    f"{point['FileSystemId']}, not {file_system_id}"
                )
        zone = (node["metadata"].get("labels") or {}).get(ZONE_LABEL, "")
        vpc = self._vpc_of(instance_of(node))
        targets = self._efs.describe_mount_targets(FileSystemId=file_system_id)["MountTargets"]
        if not any(t["AvailabilityZoneName"] == zone and t["VpcId"] == vpc for t in targets):
            return (
                f'Could not mount "{file_system_id}:/": mount failed: Failed to resolve '
                f'"{file_system_id}.efs.amazonaws.com": no mount target in {zone} of {vpc} '
                "(create one in the node's zone, in the cluster's VPC)"
            )
        options = set(pv["spec"].get("mountOptions") or [])
        missing = [
            o for o in ("tls", "iam") if o not in options and self._required(file_system_id, o)
        ]
        if missing:
            return (
                f'Could not mount "{file_system_id}:/": mount failed: exit status 32: '
                "mount.nfs4: access denied by server while mounting 127.0.0.1:/ "
                f"(the file system policy requires {' and '.join(missing)})"
            )
        return None

    def _required(self, file_system_id: str, option: str) -> bool:
        """Whether the file system's policy refuses a client without `option`: `tls` when
        it denies requests without secure transport, `iam` when it has a policy at all
        (one that allows no anonymous client refuses unsigned mounts)."""
        try:
            raw = self._efs.describe_file_system_policy(FileSystemId=file_system_id)["Policy"]
        except ClientError:
            return False  # no policy: EFS lets every client in the VPC mount
        if option == "iam":
            return True
        return "aws:SecureTransport" in json.dumps(json.loads(raw))

    def _vpc_of(self, instance: str) -> str:
        if instance not in self._vpcs:
            try:
                found = self._ec2.describe_instances(InstanceIds=[instance])["Reservations"]
                self._vpcs[instance] = found[0]["Instances"][0].get("VpcId", "")
            except ClientError:
                return ""
        return self._vpcs[instance]


def _read_only(pod: Obj, pv: Obj) -> bool:
    """The kubelet's readOnly for the mount: the volume's own, or the pod's for its claim."""
    if pv["spec"]["csi"].get("readOnly"):
        return True
    claim = (pv["spec"].get("claimRef") or {}).get("name")
    return any(
        (v.get("persistentVolumeClaim") or {}).get("claimName") == claim
        and (v.get("persistentVolumeClaim") or {}).get("readOnly", False)
        for v in (pod.get("spec") or {}).get("volumes") or []
    )


def _describe(error: ClientError) -> str:
    return f"{error.response['Error']['Code']}: {error.response['Error'].get('Message', '')}"
