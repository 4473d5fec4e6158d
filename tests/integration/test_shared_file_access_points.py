"""Each user's access point (gpudev/shared_files/service.py) against real PostgreSQL and
moto's EFS with the local cloud's CreateAccessPoint seam (idempotent under ClientToken, as
EFS is): made once per user whatever runs at once, found again after a try that died
before its commit, never another user's."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from gpudev.shared_files.access_points import create_request
from gpudev.shared_files.service import personal_access_point
from localcloud import moto_efs

WAIT_SECONDS = 30.0


@pytest.fixture
def efs() -> Iterator[Any]:
    import boto3
    from moto import mock_aws

    uninstall = moto_efs.install()
    try:
        with mock_aws():
            yield boto3.client("efs", region_name="us-east-2")
    finally:
        uninstall()


@pytest.fixture
def file_system(efs: Any) -> str:
    return str(efs.create_file_system(CreationToken="t", Encrypted=True)["FileSystemId"])


def _users_points(efs: Any, file_system: str, root: str) -> list[str]:
    points = efs.describe_access_points(FileSystemId=file_system)["AccessPoints"]
    return [p["AccessPointId"] for p in points if p["RootDirectory"]["Path"] == root]


class _HoldsTheLock:
    """The EFS client, whose CreateAccessPoint first waits until every other try is
    blocked on the user's row lock (seen in pg_stat_activity): the race is really run."""

    def __init__(self, efs: Any, database: str, others: int):
        self._efs, self._database, self._others = efs, database, others
        self.creates = 0

    def create_access_point(self, **request: Any) -> Any:
        self.creates += 1
        with psycopg.connect(self._database, autocommit=True) as watcher:
            waited = threading.Event()
            for _ in range(int(WAIT_SECONDS / 0.05)):
                (blocked,) = watcher.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND query LIKE '%%shared_file_access_points%%'"
                ).fetchone() or (0,)
                if blocked >= self._others:
                    break
                waited.wait(0.05)
            else:
                raise AssertionError("the other tries never waited on the row lock")
        return self._efs.create_access_point(**request)

    def describe_access_points(self, **request: Any) -> Any:
        return self._efs.describe_access_points(**request)


def test_concurrent_first_reservations_make_one_access_point(
    fresh_database: str, efs: Any, file_system: str
):
    tries = 4
    client = _HoldsTheLock(efs, fresh_database, tries - 1)
    start = threading.Barrier(tries)
    found: list[str] = []
    errors: list[BaseException] = []

    def first_reservation() -> None:
        try:
            with psycopg.connect(fresh_database, autocommit=True) as conn:
                start.wait()
                found.append(personal_access_point(conn, client, file_system, "alice"))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=first_reservation) for _ in range(tries)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_SECONDS)
    assert errors == []
    assert len(found) == tries and len(set(found)) == 1
    assert client.creates == 1
    assert _users_points(efs, file_system, "/users/alice") == found[:1]


def test_a_try_that_died_before_its_commit_gets_the_same_access_point_back(
    autocommit_conn: psycopg.Connection[Any], efs: Any, file_system: str
):
    made_then_lost = efs.create_access_point(**create_request(file_system, "alice"))
    found = personal_access_point(autocommit_conn, efs, file_system, "alice")
    assert found == made_then_lost["AccessPointId"]
    assert personal_access_point(autocommit_conn, efs, file_system, "alice") == found
    assert _users_points(efs, file_system, "/users/alice") == [found]


def test_each_user_gets_their_own_access_point(
    autocommit_conn: psycopg.Connection[Any], efs: Any, file_system: str
):
    alice = personal_access_point(autocommit_conn, efs, file_system, "alice")
    bob = personal_access_point(autocommit_conn, efs, file_system, "bob")
    assert alice != bob
    (point,) = efs.describe_access_points(AccessPointId=bob)["AccessPoints"]
    assert point["RootDirectory"]["Path"] == "/users/bob"
    rows = autocommit_conn.execute(
        "SELECT user_id, access_point_id FROM shared_file_access_points ORDER BY 1"
    ).fetchall()
    assert rows == [("alice", alice), ("bob", bob)]


def test_a_file_system_that_does_not_exist_leaves_no_row_behind(
    autocommit_conn: psycopg.Connection[Any], efs: Any
):
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError, match="FileSystemNotFound"):
        personal_access_point(autocommit_conn, efs, "fs-0123456789abcdef0", "alice")
    count = autocommit_conn.execute("SELECT count(*) FROM shared_file_access_points").fetchone()
    assert count == (0,)


def test_the_access_point_row_constraints_refuse_a_second_row_or_a_shared_point(
    autocommit_conn: psycopg.Connection[Any],
):
    insert = (
        "INSERT INTO shared_file_access_points"
        " (user_id, file_system_id, client_token, access_point_id, ready_at)"
        " VALUES (%s, 'fs-01234567', %s, %s, now())"
    )
    autocommit_conn.execute(insert, ("alice", "t1", "fsap-1"))
    with pytest.raises(psycopg.errors.UniqueViolation, match="access_point_key"):
        autocommit_conn.execute(insert, ("bob", "t2", "fsap-1"))
    with pytest.raises(psycopg.errors.UniqueViolation, match="pkey"):
        autocommit_conn.execute(insert, ("alice", "t3", "fsap-3"))
    with pytest.raises(psycopg.errors.CheckViolation, match="ready_check"):
        autocommit_conn.execute(
            "INSERT INTO shared_file_access_points (user_id, file_system_id, client_token,"
            " access_point_id) VALUES ('dave', 'fs-01234567', 't4', 'fsap-4')"
        )


def test_a_recorded_access_point_that_was_deleted_is_made_again_with_a_fresh_token(
    autocommit_conn: psycopg.Connection[Any], efs: Any, file_system: str
):
    """The review's finding: a row naming a deleted access point was reused forever, so
    every reservation of the user failed to mount."""
    first = personal_access_point(autocommit_conn, efs, file_system, "alice")
    (before,) = autocommit_conn.execute(
        "SELECT client_token FROM shared_file_access_points WHERE user_id = 'alice'"
    ).fetchone()
    efs.delete_access_point(AccessPointId=first)

    second = personal_access_point(autocommit_conn, efs, file_system, "alice")
    assert second != first
    assert _users_points(efs, file_system, "/users/alice") == [second]
    row = autocommit_conn.execute(
        "SELECT access_point_id, client_token, ready_at IS NOT NULL"
        " FROM shared_file_access_points WHERE user_id = 'alice'"
    ).fetchone()
    assert row is not None and row[0] == second and row[1] != before and row[2]
    # and it is reused after, as any recorded access point
    assert personal_access_point(autocommit_conn, efs, file_system, "alice") == second
    assert _users_points(efs, file_system, "/users/alice") == [second]
