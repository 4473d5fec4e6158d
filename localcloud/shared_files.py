"""The personal network file system on moto, as the cluster stack declares it
(cdk_app/declaration.py, cdk_app/shared_files.py): one encrypted EFS file system, its
lifecycle to Infrequent Access, its file system policy, and a mount target in the subnet of
each of the cluster's zones (moto's default subnets, where its node groups' instances run).
Its id reaches the lifecycle as the cluster stack's output does in AWS
(`SHARED_FILES_FILE_SYSTEM_ID`), and so does the team access point's
(`SHARED_FILES_TEAM_ACCESS_POINT_ID`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from cdk_app.declaration import (
    SHARED_FILES_CREATION_TOKEN,
    SHARED_FILES_IA_AFTER,
    TEAM_SHARE_PERMISSIONS,
    TEAM_SHARE_ROOT,
)
from cdk_app.shared_files_policy import file_system_policy
from gpudev.shared_files.access_points import DEV_GID, DEV_UID

CSI_ROLE_NAME = "gpudev-local-efs-csi-driver"


def create_shared_file_system(client: Callable[[str], Any], zones: list[str]) -> str:
    efs, ec2 = client("efs"), client("ec2")
    made = efs.create_file_system(
        CreationToken=SHARED_FILES_CREATION_TOKEN,
        Encrypted=True,
        PerformanceMode="generalPurpose",
        ThroughputMode="elastic",
        Tags=[{"Key": "Name", "Value": "gpu-dev-shared-personal"}],
    )
    file_system_id = made["FileSystemId"]
    efs.put_lifecycle_configuration(
        FileSystemId=file_system_id,
        LifecyclePolicies=[{"TransitionToIA": SHARED_FILES_IA_AFTER}],
    )
    account = made["OwnerId"]
    policy = file_system_policy(
        file_system_arn=made["FileSystemArn"],
        csi_role_arn=f"arn:aws:iam::{account}:role/{CSI_ROLE_NAME}",
        access_points_arn=made["FileSystemArn"].replace(
            f"file-system/{file_system_id}", "access-point/*"
        ),
    )
    efs.put_file_system_policy(FileSystemId=file_system_id, Policy=json.dumps(policy))
    subnets = ec2.describe_subnets(Filters=[{"Name": "default-for-az", "Values": ["true"]}])
    by_zone = {s["AvailabilityZone"]: s["SubnetId"] for s in subnets["Subnets"]}
    for zone in zones:
        efs.create_mount_target(FileSystemId=file_system_id, SubnetId=by_zone[zone])
    return str(file_system_id)


def create_team_access_point(client: Callable[[str], Any], file_system_id: str) -> str:
    """The team's one access point, as cdk_app/team_share.py declares it. The local cloud
    makes it always; `SHARED_FILES_TEAM_SHARE=ro|rw` (the context's variable) has the pods
    mount it."""
    made = client("efs").create_access_point(
        ClientToken="gpu-dev-team",
        FileSystemId=file_system_id,
        PosixUser={"Uid": DEV_UID, "Gid": DEV_GID},
        RootDirectory={
            "Path": TEAM_SHARE_ROOT,
            "CreationInfo": {
                "OwnerUid": DEV_UID,
                "OwnerGid": DEV_GID,
                "Permissions": TEAM_SHARE_PERMISSIONS,
            },
        },
        Tags=[{"Key": "Name", "Value": "gpu-dev-team"}],
    )
    return str(made["AccessPointId"])
