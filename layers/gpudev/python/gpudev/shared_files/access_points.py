"""The rules of a user's access point, pure: its root directory, its client token, the
request that makes it and how to recognise the one EFS gives back.

The root directory is /users/<user key>: the username when it is plain, else a readable
form of it, `.` and a hash of it (a `.` no plain name has), so two users never share a
directory. The access point enforces both the root (the client sees that directory as /,
nothing above it) and the POSIX user (every request is made as `dev`, uid/gid 1081, the
pod's account: startup.sh), so whoever mounts it acts as dev inside that user's directory
only (docs/security.md)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

ROOT = "/users"
DEV_UID = DEV_GID = 1081  # the pod's `dev` account (cluster/startup.sh useradd -u 1081)
PERMISSIONS = "0700"  # dev's own: nobody else on a client sees into it
USER_TAG = "gpu-dev-user"  # the access point's owner (its user key); CDK scopes on the tag
_KEPT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
_NOT_KEPT = re.compile(r"[^A-Za-z0-9_-]+")
HASHED = "."  # between a hashed key's readable form and digest: outside _KEPT's charset


def user_key(user_id: str) -> str:
    """The user's directory name and tag value: the username when it is plain (letters,
    digits, `_`, `-`, at most 40), else a readable form, `.` and 12 hex of its SHA-256.
    The `.` is never in a plain name, so no username is another's hashed key (a `-` was:
    `alice_smith-6342582757b1` is plain and was `alice.smith`'s key)."""
    if not user_id:
        raise ValueError("a user key needs a username")
    if _KEPT.match(user_id):
        return user_id
    digest = hashlib.sha256(user_id.encode()).hexdigest()[:12]
    readable = _NOT_KEPT.sub("_", user_id)[:27].strip("_-") or "user"
    return f"{readable}{HASHED}{digest}"


def root_directory(user_id: str) -> str:
    return f"{ROOT}/{user_key(user_id)}"


def client_token(file_system_id: str, user_id: str) -> str:
    """The same for every try of the same user on the same file system (EFS answers a
    repeated CreateAccessPoint with the access point the token made), 64 characters (EFS's
    limit)."""
    return hashlib.sha256(f"gpu-dev:{file_system_id}:{user_id}".encode()).hexdigest()


def replacement_token(file_system_id: str, user_id: str, gone_access_point_id: str) -> str:
    """The client token for the access point that replaces a deleted one: fresh (EFS may
    answer the first token with the deleted access point), yet the same for every try that
    replaces the same one."""
    return hashlib.sha256(
        f"gpu-dev:{file_system_id}:{user_id}:replaces:{gone_access_point_id}".encode()
    ).hexdigest()


def create_request(file_system_id: str, user_id: str, token: str | None = None) -> dict[str, Any]:
    """CreateAccessPoint's parameters for the user (`token`: the row's, when not the
    first)."""
    key = user_key(user_id)
    return {
        "ClientToken": token or client_token(file_system_id, user_id),
        "FileSystemId": file_system_id,
        "PosixUser": {"Uid": DEV_UID, "Gid": DEV_GID},
        "RootDirectory": {
            "Path": root_directory(user_id),
            "CreationInfo": {
                "OwnerUid": DEV_UID,
                "OwnerGid": DEV_GID,
                "Permissions": PERMISSIONS,
            },
        },
        "Tags": [{"Key": "Name", "Value": f"gpu-dev-{key}"}, {"Key": USER_TAG, "Value": key}],
    }


def belongs_to(access_point: dict[str, Any], file_system_id: str, user_id: str) -> bool:
    """`access_point` (as DescribeAccessPoints answers) is the user's on the file system:
    its file system, root and POSIX user are the ones the user's request sets."""
    return (
        access_point.get("FileSystemId") == file_system_id
        and access_point.get("RootDirectory", {}).get("Path") == root_directory(user_id)
        and access_point.get("PosixUser", {}).get("Uid") == DEV_UID
        and access_point.get("PosixUser", {}).get("Gid") == DEV_GID
    )
