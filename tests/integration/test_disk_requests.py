"""Disk requests go through the transactional outbox like reservation requests
(gpudev/disks/requests.py, gpudev/outbox.py): each job is written by the statement that
records the request, sent only after the commit, and relayed by the sweeper when the send
was refused; a request that rolls back leaves no job anywhere."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from gpudev.db.queries import all_query_names, query
from gpudev.disks.requests import (
    DiskRequest,
    RenameRequest,
    create_disk,
    delete_disk,
    rename_disk,
    restore_disk,
)
from gpudev.errors import Conflict, Gone, NotFound
from gpudev.jobs import AnyJob, DiskJob
from gpudev.outbox import relay_outbox
from gpudev.repositories import DisksRepository
from tests.support.submitters import ALICE, RecordingQueue, RefusingQueue


@pytest.fixture
def conn(fresh_database: str) -> Any:
    with psycopg.connect(fresh_database, autocommit=True) as connection:
        yield connection


def _outbox(conn: psycopg.Connection[Any]) -> list[Any]:
    return [row[0] for row in conn.execute("SELECT payload FROM outbox ORDER BY created_at")]


def test_each_disk_job_is_sent_only_after_its_request_committed_then_its_row_deleted(
    conn: psycopg.Connection[Any], fresh_database: str
):
    seen: list[tuple[str, str | None, int]] = []

    def look_from_another_connection(job: AnyJob) -> None:
        assert isinstance(job, DiskJob)
        with psycopg.connect(fresh_database) as other:
            row = other.execute(
                "SELECT d.disk_name, (SELECT count(*) FROM outbox) FROM disks d"
                " WHERE d.operation_id = %s",
                (job.operation_id,),
            ).fetchone()
        assert row is not None, "the request is committed before its job is sent"
        seen.append((job.operation, row[0], row[1]))

    queue = RecordingQueue(look_from_another_connection)
    created = create_disk(conn, queue, ALICE, DiskRequest(disk_name="data", size_gb=100))  # type: ignore[arg-type]
    renamed = rename_disk(conn, queue, ALICE, "data", RenameRequest(new_name="work"))  # type: ignore[arg-type]
    deleted = delete_disk(conn, queue, ALICE, "work")  # type: ignore[arg-type]

    assert seen == [("create", "data", 1), ("rename", "work", 1), ("delete", "work", 1)]
    assert [job.model_dump(exclude={"operation_id"}) for job in queue.sent] == [
        {
            "kind": "disk_operation",
            "operation": operation,
            "disk_id": created.disk_id,
            "user_id": "alice",
            "disk_name": name,
            "previous_name": previous,
        }
        for operation, name, previous in [
            ("create", "data", None),
            ("rename", "work", "data"),
            ("delete", "work", None),
        ]
    ]
    assert [job.operation_id for job in queue.sent] == [
        created.operation_id,
        renamed.operation_id,
        deleted.operation_id,
    ]
    assert _outbox(conn) == [], "each sent job's outbox row is deleted"


def test_a_disk_job_refused_after_commit_keeps_the_request_and_the_relay_sends_it(
    conn: psycopg.Connection[Any],
):
    refusing = RefusingQueue()
    created = create_disk(conn, refusing, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    assert refusing.tries == 1 and created.operation_status == "requested"
    assert DisksRepository(conn).get("alice", "data") is not None, "the request is saved"
    assert [payload["operation"] for payload in _outbox(conn)] == ["create"]

    relay = RecordingQueue()
    relayed = relay_outbox(conn, relay, older_than_seconds=0)
    assert (relayed.sent, relayed.refused) == (1, 0)
    (job,) = relay.sent
    assert isinstance(job, DiskJob)
    assert (job.operation, job.disk_id, job.operation_id) == (
        "create",
        created.disk_id,
        created.operation_id,
    )
    assert _outbox(conn) == []


def test_a_rolled_back_disk_request_writes_no_job_and_nothing_is_sent_or_relayed(
    conn: psycopg.Connection[Any],
):
    queue = RecordingQueue()
    create_disk(conn, queue, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    create_disk(conn, queue, ALICE, DiskRequest(disk_name="taken"))  # type: ignore[arg-type]
    queue.sent.clear()

    with pytest.raises(RuntimeError), conn.transaction():
        assert DisksRepository(conn).request_delete("alice", "data") is not None
        raise RuntimeError("the request failed after its statement")
    with pytest.raises(Conflict):  # the name is taken: the statement itself fails
        rename_disk(conn, queue, ALICE, "data", RenameRequest(new_name="taken"))  # type: ignore[arg-type]

    assert _outbox(conn) == [] and queue.sent == []
    disk = DisksRepository(conn).get("alice", "data")
    assert disk is not None and not disk.is_deleted
    relay = RecordingQueue()
    assert relay_outbox(conn, relay, older_than_seconds=0).sent == 0 and relay.sent == []


def test_a_request_that_changes_nothing_writes_no_job(conn: psycopg.Connection[Any]):
    repo = DisksRepository(conn)
    assert repo.request_delete("alice", "missing") is None
    assert repo.rename("alice", "missing", "other") is None
    assert repo.request_restore("alice", "missing") is None
    assert _outbox(conn) == []


def test_every_statement_writes_its_job_through_the_one_outbox_function():
    """One way to write a job (migrations/0010 outbox_write): no statement inserts into
    the outbox table itself, and every request statement that names the outbox calls it,
    the disk requests through migrations/0022 disk_job_write."""
    inserting = [name for name in all_query_names() if "insert into outbox" in query(name).lower()]
    assert inserting == []
    writers = sorted(
        name
        for name in all_query_names()
        if "outbox_write(" in query(name) or "disk_job_write(" in query(name)
    )
    assert writers == [
        "disks/rename",
        "disks/request_clone",
        "disks/request_create",
        "disks/request_delete",
        "disks/request_restore",
        "reservations/change",
        "reservations/request_cancel",
        "reservations/submit",
    ]
    migrations = Path(__file__).parents[2] / "migrations"
    assert "INSERT INTO outbox" in (migrations / "0010_outbox_write.sql").read_text()
    assert "outbox_write(" in (migrations / "0022_disk_request_functions.sql").read_text()


def _live_reservation_naming(conn: psycopg.Connection[Any], disk_name: str) -> str:
    row = conn.execute(
        "INSERT INTO reservations (reservation_id, user_id, gpu_type, gpu_count, duration_hours,"
        " disk_name, status) VALUES (gen_random_uuid(), 'alice', 't4', 1, 2, %s, 'queued')"
        " RETURNING reservation_id",
        (disk_name,),
    ).fetchone()
    assert row is not None
    return str(row[0])


@pytest.mark.parametrize("action", ["rename", "delete"])
def test_a_disk_named_by_a_live_reservation_cannot_be_renamed_or_deleted(
    conn: psycopg.Connection[Any], action: str
):
    queue = RecordingQueue()
    create_disk(conn, queue, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    holder = _live_reservation_naming(conn, "data")
    queue.sent.clear()

    with pytest.raises(Conflict, match=f"in use by reservation {holder[:8]}"):
        if action == "rename":
            rename_disk(conn, queue, ALICE, "data", RenameRequest(new_name="work"))  # type: ignore[arg-type]
        else:
            delete_disk(conn, queue, ALICE, "data")

    disk = DisksRepository(conn).get("alice", "data")
    assert disk is not None and not disk.is_deleted and disk.operation_status == "requested"
    assert queue.sent == [] and _outbox(conn) == []


def test_creating_a_disk_with_the_name_of_one_marked_deleted_offers_restore(
    conn: psycopg.Connection[Any],
):
    queue = RecordingQueue()
    create_disk(conn, queue, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    delete_disk(conn, queue, ALICE, "data")
    queue.sent.clear()

    with pytest.raises(Conflict, match=r"marked for deletion on .*gpu-dev disk restore data"):
        create_disk(conn, queue, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    assert queue.sent == [] and _outbox(conn) == []

    restored = restore_disk(conn, queue, ALICE, "data")
    assert not restored.is_deleted and [j.kind for j in queue.sent] == ["disk_operation"]


def test_restore_is_refused_for_a_disk_not_deleted_or_past_its_date(
    conn: psycopg.Connection[Any],
):
    queue = RecordingQueue()
    create_disk(conn, queue, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    with pytest.raises(Conflict, match="not marked for deletion"):
        restore_disk(conn, queue, ALICE, "data")
    delete_disk(conn, queue, ALICE, "data")
    conn.execute("UPDATE disks SET delete_date = current_date")
    with pytest.raises(Gone, match="cannot be restored"):
        restore_disk(conn, queue, ALICE, "data")
    with pytest.raises(NotFound):
        restore_disk(conn, queue, ALICE, "missing")
    disk = DisksRepository(conn).get("alice", "data")
    assert disk is not None and disk.is_deleted


def test_a_name_still_on_the_tags_of_a_renamed_disk_cannot_be_taken_until_its_rename_applied(
    conn: psycopg.Connection[Any],
):
    """Until the rename job re-tags its snapshots, a disk renamed from `data` is found under
    `data` too: a new disk of that name would mount (or lose) the renamed disk's data."""
    queue = RecordingQueue()
    create_disk(conn, queue, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    create_disk(conn, queue, ALICE, DiskRequest(disk_name="scratch"))  # type: ignore[arg-type]
    rename_disk(conn, queue, ALICE, "data", RenameRequest(new_name="work"))  # type: ignore[arg-type]
    queue.sent.clear()

    with pytest.raises(Conflict, match=r"'data' is still on the snapshots of your disk 'work'"):
        create_disk(conn, queue, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    with pytest.raises(Conflict, match=r"'data' is still on the snapshots of your disk 'work'"):
        rename_disk(conn, queue, ALICE, "scratch", RenameRequest(new_name="data"))  # type: ignore[arg-type]
    assert queue.sent == [] and _outbox(conn) == []
    assert DisksRepository(conn).get("alice", "data") is None

    # renaming it back is its own name; once the tags carry `work`, `data` is free
    conn.execute("UPDATE disks SET tagged_name = NULL WHERE disk_name = 'work'")
    create_disk(conn, queue, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]


@pytest.mark.parametrize("second", ["create", "rename"])
def test_a_name_taken_while_a_rename_from_it_commits_is_refused_not_doubled(
    conn: psycopg.Connection[Any], fresh_database: str, second: str
):
    """Two concurrent requests: a rename of `data` (its tags still say `data` afterwards)
    held open, and a create of, or a rename to, `data`. The second waits for the first to
    commit and is refused; it never makes a second disk answering to `data` in EBS."""
    queue = RecordingQueue()
    create_disk(conn, queue, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
    create_disk(conn, queue, ALICE, DiskRequest(disk_name="scratch"))  # type: ignore[arg-type]
    outcome: list[BaseException | None] = []
    started = threading.Event()

    def take_the_name() -> None:
        with psycopg.connect(fresh_database, autocommit=True) as other:
            started.set()
            try:
                if second == "create":
                    create_disk(other, queue, ALICE, DiskRequest(disk_name="data"))  # type: ignore[arg-type]
                else:
                    rename_disk(other, queue, ALICE, "scratch", RenameRequest(new_name="data"))  # type: ignore[arg-type]
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

    with psycopg.connect(fresh_database) as first:  # its transaction stays open until commit
        assert DisksRepository(first).rename("alice", "data", "work") is not None
        thread = threading.Thread(target=take_the_name)
        thread.start()
        assert started.wait(5)
        thread.join(1.0)
        assert thread.is_alive(), "the second request waits for the first to commit"
        first.commit()
    thread.join(10)

    (refused,) = outcome
    assert isinstance(refused, Conflict), refused
    assert "'data' is still on the snapshots of your disk 'work'" in str(refused)
    names = {d.disk_name: d.tagged_name for d in DisksRepository(conn).list_for_user("alice")}
    assert names == {"work": "data", "scratch": None}
