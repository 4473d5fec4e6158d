"""The personal file system's resource policy, as plain data: the cluster stack
(cdk_app/shared_files.py) and the local cloud (localcloud/shared_files.py) both set it.

- Nothing over plain NFS: every request without TLS is denied, whoever makes it.
- Nobody anonymous: a file system with a policy refuses NFS clients that do not sign in with
  IAM (the `iam` mount option) unless a statement allows them; none does.
- The EFS CSI driver's role may mount and write only through a mount target and an access
  point (each user's, rooted at their own directory as `dev`), never the file system's root,
  and never as root (no ClientRootAccess).
"""

from __future__ import annotations

from typing import Any

POLICY_VERSION = "2012-10-17"


def file_system_policy(
    file_system_arn: str, csi_role_arn: str, access_points_arn: str
) -> dict[str, Any]:
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Sid": "DenyWithoutTls",
                "Effect": "Deny",
                "Principal": {"AWS": "*"},
                "Action": "*",
                "Resource": file_system_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
            {
                "Sid": "CsiDriverThroughAccessPoints",
                "Effect": "Allow",
                "Principal": {"AWS": csi_role_arn},
                "Action": ["elasticfilesystem:ClientMount", "elasticfilesystem:ClientWrite"],
                "Resource": file_system_arn,
                "Condition": {
                    "Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"},
                    "ArnLike": {"elasticfilesystem:AccessPointArn": access_points_arn},
                },
            },
        ],
    }
