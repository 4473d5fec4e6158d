"""CreateAccessPoint as EFS does it: idempotent under its ClientToken, and only on a file
system that exists.

moto makes a new access point for every call, whatever its token, and on any file system
id. EFS answers a repeated request (same token, same parameters) with the access point the
token made, refuses the token with other parameters (IdempotentParameterMismatch, HTTP 409)
and a file system that does not exist (FileSystemNotFound). The lifecycle relies on the
first (a retried provision must not make a second access point for the user:
gpudev/shared_files/service.py), so the local cloud must do all three.

The seam wraps moto's `EFSBackend.create_access_point`; moto is pinned exactly, and
tests/unit/test_shared_files.py fails loudly if the method moves or changes shape.

It also makes DescribeFileSystems' `SizeInBytes` honest. moto answers 0 bytes metered at
the moment of each call; EFS answers 6 KiB for an empty file system (its root directory's
metadata), metered at some earlier time, and moves the figure only when it meters again.
So the seam answers the last figure `meter` recorded (6 KiB at the file system's creation
until then): a test writes what EFS would have metered, the API reads it with its time.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from moto.efs.exceptions import EFSError, FileSystemNotFound
from moto.efs.models import AccessPoint, EFSBackend, FileSystem

EXPECTED_SIGNATURE = (
    "(self, client_token: str, tags: list[dict[str, str]], file_system_id: str, "
    "posix_user: dict[str, typing.Any], root_directory: dict[str, typing.Any]) -> "
    "moto.efs.models.AccessPoint"
)
_MOTO_CREATE = EFSBackend.create_access_point
_MOTO_SIZE = FileSystem.size_in_bytes
EMPTY_METERED_BYTES = 6144  # an empty file system's metered size in EFS
_METERED: dict[str, tuple[int, float]] = {}  # file system id -> (bytes, metered at)


def meter(file_system_id: str, metered_bytes: int, at: float) -> None:
    """What EFS would have metered for the file system at `at` (seconds since the epoch):
    DescribeFileSystems answers it from then on."""
    _METERED[file_system_id] = (metered_bytes, at)


def _size_in_bytes(file_system: FileSystem) -> dict[str, Any]:
    value, at = _METERED.get(
        file_system.file_system_id, (EMPTY_METERED_BYTES, file_system.creation_time)
    )
    return {
        "Value": value,
        "Timestamp": at,
        "ValueInIA": 0,
        "ValueInStandard": value,
        "ValueInArchive": 0,
    }


class IdempotentParameterMismatch(EFSError):
    code = 409

    def __init__(self, token: str):
        super().__init__(
            "IdempotentParameterMismatch",
            f"The client token {token} was already used with different parameters",
        )


def seam_signature() -> str:
    return str(inspect.signature(_MOTO_CREATE))


def install() -> Callable[[], None]:
    def create_access_point(
        self: EFSBackend,
        client_token: str,
        tags: list[dict[str, str]],
        file_system_id: str,
        posix_user: dict[str, Any],
        root_directory: dict[str, Any],
    ) -> AccessPoint:
        if file_system_id not in self.file_systems_by_id:
            raise FileSystemNotFound(file_system_id)
        for existing in self.access_points.values():
            if client_token and existing.client_token == client_token:
                same = (
                    existing.file_system_id == file_system_id
                    and existing.posix_user == posix_user
                    and existing.root_directory == (root_directory or {"Path": "/"})
                )
                if not same:
                    raise IdempotentParameterMismatch(client_token)
                return existing
        return _MOTO_CREATE(self, client_token, tags, file_system_id, posix_user, root_directory)

    EFSBackend.create_access_point = create_access_point  # type: ignore[method-assign]
    FileSystem.size_in_bytes = property(_size_in_bytes)  # type: ignore[assignment,method-assign]

    def uninstall() -> None:
        EFSBackend.create_access_point = _MOTO_CREATE  # type: ignore[method-assign]
        FileSystem.size_in_bytes = _MOTO_SIZE  # type: ignore[method-assign]
        _METERED.clear()

    return uninstall
