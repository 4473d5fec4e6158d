"""The personal network file system on moto, as the cluster stack declares it
(cdk_app/declaration.py, cdk_app/shared_files.py): one encrypted EFS file system, its
lifecycle to Infrequent Access, its file system policy, and a mount target in the subnet of
each of the cluster's zones (moto's default subnets, where its node groups' instances run).
Its id reaches the lifecycle as the cluster stack's output does in AWS
(`SHARED_FILES_FILE_SYSTEM_ID`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from cdk_app.declaration import SHARED_FILES_CREATION_TOKEN, SHARED_FILES_IA_AFTER
from cdk_app.shared_files_policy import file_system_policy

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
