"""The optional team share at /shared (docs/shared-files.md, "The team share").

`gpudev:teamShare` turns it on: `off` (the default), `ro` (read-only in every pod) or `rw`
(read-write: any user can change or delete any file there, and plant what another user's
job will run). The cluster stack then makes the team's one access point on the shared
file system (`team_access_point`), rooted at /team, owned by `dev`, and passes its id to
the main stack (`gpudev:teamShareAccessPointId` in MainStackContext). A mode other than
off, ro or rw stops every synth with a sentence. The main stack without the file system or
the team access point gets an error annotation saying what to set: `cdk synth` and a
deploy of the main stack fail on it, while `cdk deploy GpuDevCluster` (the first step, which
makes the access point) still runs in the same app.
"""

from __future__ import annotations

import re

from aws_cdk import Annotations
from aws_cdk import aws_efs as efs
from constructs import Construct

from cdk_app.declaration import (
    SHARED_FILE_SYSTEM_ID,
    TEAM_SHARE,
    TEAM_SHARE_ACCESS_POINT,
    TEAM_SHARE_PERMISSIONS,
    TEAM_SHARE_ROOT,
)
from gpudev.shared_files.access_points import DEV_GID, DEV_UID

MODES = ("off", "ro", "rw")
_ACCESS_POINT = re.compile(r"^fsap-[0-9a-f]{8,40}$")
_FILE_SYSTEM = re.compile(r"^fs-[0-9a-f]{8,40}$")


def team_share_mode(scope: Construct) -> str:
    """`off`, `ro` or `rw`; anything else stops the synth with what to set."""
    raw = scope.node.try_get_context(TEAM_SHARE.context_key)
    mode = TEAM_SHARE.default if raw is None else raw
    if mode not in MODES:
        raise ValueError(
            f"context {TEAM_SHARE.context_key}: off, ro (read-only) or rw (read-write, "
            f"every user can change every file) for the team share at /shared; got {raw!r}"
        )
    return str(mode)


def check_team_share(scope: Construct) -> str:
    """The main stack's check: a team share that is on needs the shared file system and
    the cluster stack's team access point (an error annotation otherwise). Returns the
    mode."""
    mode = team_share_mode(scope)
    if mode == "off":
        return mode
    file_system = scope.node.try_get_context(SHARED_FILE_SYSTEM_ID.context_key)
    point = scope.node.try_get_context(TEAM_SHARE_ACCESS_POINT.context_key)
    if not isinstance(file_system, str) or not _FILE_SYSTEM.match(file_system):
        Annotations.of(scope).add_error(
            f"context {TEAM_SHARE.context_key}={mode} needs the shared file system: set "
            f"{SHARED_FILE_SYSTEM_ID.context_key} to the cluster stack's output "
            f"SharedFileSystemId (fs-...); got {file_system!r}"
        )
    elif not isinstance(point, str) or not _ACCESS_POINT.match(point):
        Annotations.of(scope).add_error(
            f"context {TEAM_SHARE.context_key}={mode} needs the team access point: set "
            f"{TEAM_SHARE_ACCESS_POINT.context_key} to the cluster stack's output "
            f"TeamShareAccessPointId (fsap-...); got {point!r}"
        )
    return mode


def team_access_point(scope: Construct, file_system: efs.CfnFileSystem) -> efs.CfnAccessPoint:
    """The team's one access point: its own root directory, made owned by dev on first
    mount, every request made as dev (the file system policy lets the EFS CSI driver's role
    in through access points only)."""
    return efs.CfnAccessPoint(
        scope,
        "TeamAccessPoint",
        file_system_id=file_system.ref,
        posix_user=efs.CfnAccessPoint.PosixUserProperty(uid=str(DEV_UID), gid=str(DEV_GID)),
        root_directory=efs.CfnAccessPoint.RootDirectoryProperty(
            path=TEAM_SHARE_ROOT,
            creation_info=efs.CfnAccessPoint.CreationInfoProperty(
                owner_uid=str(DEV_UID), owner_gid=str(DEV_GID), permissions=TEAM_SHARE_PERMISSIONS
            ),
        ),
        access_point_tags=[
            efs.CfnAccessPoint.AccessPointTagProperty(key="Name", value="gpu-dev-team")
        ],
    )
