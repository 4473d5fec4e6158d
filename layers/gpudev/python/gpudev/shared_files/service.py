"""A user's access point, made on their first reservation and reused after.

`personal_access_point` claims the user's row (its primary key decides between two first
reservations at once), locks it, and only then, if it has no access point yet (or the one
recorded was deleted from EFS: then with a fresh token), asks EFS for one with the row's
client token: the second reservation waits on the lock and finds the
access point recorded. A try that dies between CreateAccessPoint and the commit leaves no
row change; the next try sends the same token and EFS gives the same access point back.
The user comes from the reservation row, which the API wrote from the caller's verified
identity: no request names an access point (docs/security.md)."""

from __future__ import annotations

from typing import Any

import psycopg
from botocore.exceptions import ClientError

from gpudev.observability import logger
from gpudev.repositories.shared_files import AccessPointsRepository
from gpudev.shared_files.access_points import (
    belongs_to,
    client_token,
    create_request,
    replacement_token,
)


class AccessPointMismatch(RuntimeError):
    """EFS answered with an access point that is not the user's (wrong root, user or file
    system): never mounted."""


def personal_access_point(
    conn: psycopg.Connection[Any], efs: Any, file_system_id: str, user_id: str
) -> str:
    """The id of `user_id`'s access point on `file_system_id`, made if it has none."""
    rows = AccessPointsRepository(conn)
    with conn.transaction():
        rows.claim(user_id, file_system_id, client_token(file_system_id, user_id))
        row = rows.locked(user_id, file_system_id)
        assert row is not None  # claimed just above, in this transaction
        if row.access_point_id is not None:
            if _exists(efs, row.access_point_id):
                return row.access_point_id
            gone = row.access_point_id
            token = replacement_token(file_system_id, user_id, gone)
            row = rows.forget(user_id, file_system_id, gone, token)
            assert row is not None  # locked above, with this access point
            logger.warning("access point gone: making another", extra={"gone": gone})
        made = efs.create_access_point(**create_request(file_system_id, user_id, row.client_token))
        if not belongs_to(made, file_system_id, user_id):
            raise AccessPointMismatch(
                f"EFS answered access point {made.get('AccessPointId')} for {user_id!r}, "
                f"which is not rooted at the user's directory as dev"
            )
        access_point_id = str(made["AccessPointId"])
        recorded = rows.record(user_id, file_system_id, access_point_id)
        if recorded is None:
            raise AccessPointMismatch(f"{user_id!r} already has another access point")
        logger.info("access point made", extra={"access_point": access_point_id, "user": user_id})
        return access_point_id


def _exists(efs: Any, access_point_id: str) -> bool:
    """The recorded access point is still there (not deleted, nor being deleted)."""
    try:
        found = efs.describe_access_points(AccessPointId=access_point_id)["AccessPoints"]
    except ClientError as error:
        if error.response["Error"]["Code"] == "AccessPointNotFound":
            return False
        raise
    return bool(found) and found[0].get("LifeCycleState") not in ("deleting", "deleted")
