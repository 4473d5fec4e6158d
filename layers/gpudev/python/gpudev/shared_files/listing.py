"""The caller's shares and a reservation's mounts, from what the control plane knows: the
deployment's settings (the shared file system, the team share's mode), the user's access
point row and the reservation's row. Pods are never asked: a reservation started before
the operator changed the settings mounts what the settings said then (docs/shared-files.md).

The personal share's usage is the file system's metered size from DescribeFileSystems,
labelled as the whole file system's: EFS meters no access point alone, and walking a
user's tree over NFS to count it is neither cheap nor consistent (docs/decisions.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

import psycopg
from botocore.exceptions import BotoCoreError, ClientError

from gpudev.callers import bound_user
from gpudev.cluster import shared_files, team_share
from gpudev.identity import Caller
from gpudev.observability import logger
from gpudev.repositories.shared_files import AccessPointsRepository
from gpudev.reservations.service import find_reservation
from gpudev.settings import SharedFilesSettings
from gpudev.shared_files.schemas import (
    FileSystemUsage,
    MountList,
    MountView,
    PersonalShareView,
    ShareList,
    TeamShareView,
)

HOME = "/home/dev"
WORKSPACE = "/workspace"


def _access_point(
    conn: psycopg.Connection[Any], user_id: str, settings: SharedFilesSettings
) -> str | None:
    row = AccessPointsRepository(conn).of_user(user_id, settings.file_system_id)
    return None if row is None else row.access_point_id


def _team(settings: SharedFilesSettings) -> TeamShareView | None:
    if settings.team_share == "off":
        return None
    return TeamShareView(mount_path=team_share.MOUNT_PATH, mode=settings.team_share)


def file_system_usage(efs: Any, file_system_id: str) -> FileSystemUsage | None:
    """EFS's latest metered size of the file system, or None when EFS does not answer (the
    listing goes on without it)."""
    try:
        [found] = efs.describe_file_systems(FileSystemId=file_system_id)["FileSystems"]
    except (ClientError, BotoCoreError) as error:
        logger.warning("no metered size", extra={"error": str(error)})
        return None
    size = found.get("SizeInBytes") or {}
    stamp = size.get("Timestamp")
    return FileSystemUsage(
        file_system_id=file_system_id,
        metered_bytes=int(size.get("Value", 0)),
        metered_at=stamp if isinstance(stamp, datetime) or stamp is None else None,
    )


def caller_shares(
    conn: psycopg.Connection[Any], caller: Caller, efs: Any, settings: SharedFilesSettings
) -> ShareList:
    bound_user(conn, caller)
    if not settings.enabled:
        return ShareList(personal=None, team=None)
    personal = PersonalShareView(
        mount_path=shared_files.MOUNT_PATH,
        access_point_id=_access_point(conn, caller.username, settings),
        usage=file_system_usage(efs, settings.file_system_id),
    )
    return ShareList(personal=personal, team=_team(settings))


def reservation_mounts(
    conn: psycopg.Connection[Any],
    caller: Caller,
    reservation_id: str,
    settings: SharedFilesSettings,
) -> MountList:
    reservation = find_reservation(conn, caller, reservation_id)
    nodes: Final[Literal["every node"]] = "every node"
    mounts = [
        MountView(
            path=HOME, what="named disk", nodes="node 0", mode="rw", disk_name=reservation.disk_name
        )
        if reservation.disk_name
        else MountView(path=HOME, what="pod disk", nodes=nodes, mode="rw"),
        MountView(path=WORKSPACE, what="node disk", nodes=nodes, mode="rw"),
    ]
    if settings.enabled:
        mounts.append(
            MountView(
                path=shared_files.MOUNT_PATH,
                what="personal share",
                nodes=nodes,
                mode="rw",
                access_point_id=_access_point(conn, reservation.user_id, settings),
            )
        )
    team = _team(settings)
    if team is not None:
        mounts.append(
            MountView(path=team.mount_path, what="team share", nodes=nodes, mode=team.mode)
        )
    return MountList(reservation_id=str(reservation.reservation_id), mounts=mounts)
