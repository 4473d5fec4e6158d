"""The transactional outbox (migrations/0009_outbox.sql): a job is written to the `outbox`
table by the same statement as the row change it announces, and sent to the jobs queue only
after that transaction commits. So a job only ever exists for a committed change, and a
change never waits on SQS to be saved.

- The API sends right after its commit (`send_after_commit`) and deletes the row; a send that
  fails there is not the caller's error (the change is saved): the row stays for the relay.
- The relay (`relay_outbox`, run by the sweeper) sends rows older than a few seconds, in
  batches locked `FOR UPDATE SKIP LOCKED`, and deletes what it sent. A job can be sent twice
  (the API's delete failing after its send); every consumer branch is idempotent.

Reservation and disk requests alike write their job this way (one SQL function,
`outbox_write`, migrations/0010); the table's statements are in repositories/outbox.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from uuid import UUID

import psycopg
from pydantic import BaseModel, ValidationError

from gpudev.errors import Unavailable
from gpudev.jobs import AnyJob, job_from_payload
from gpudev.observability import logger
from gpudev.repositories.outbox import Outboxed, OutboxRepository, WithJob

RELAY_BATCH_SIZE = 100
M = TypeVar("M", bound=BaseModel)


class JobSender(Protocol):
    def send(self, job: AnyJob) -> str: ...


def send_after_commit(conn: psycopg.Connection[Any], queue: JobSender, outboxed: Outboxed) -> bool:
    """Send a committed outbox row's job and delete the row; whether it was sent. A refused
    send or a failed delete leaves the row to the relay: the change is saved either way."""
    try:
        queue.send(outboxed.job)
    except Unavailable:
        logger.warning(
            "the jobs queue refused a job after its commit; the sweeper's relay sends it",
            extra={"outbox_id": str(outboxed.outbox_id), "kind": outboxed.job.kind},
        )
        return False
    try:
        OutboxRepository(conn).delete_sent(outboxed.outbox_id)
    except psycopg.Error:
        logger.warning(
            "a sent job's outbox row could not be deleted; the relay sends it again",
            extra={"outbox_id": str(outboxed.outbox_id)},
            exc_info=True,
        )
    return True


def commit_then_send(
    conn: psycopg.Connection[Any],
    queue: JobSender,
    write: Callable[[], WithJob[M] | None],
    unchanged: Callable[[], M],
) -> M:
    """The API's way to record a change: `write` (a statement writing the row and its job to
    the outbox) in a transaction, committed, then the job sent (`send_after_commit`); the
    changed row. When `write` changed nothing, `unchanged()`, in the same transaction, gives
    the answer or raises the refusal. `conn` must be in autocommit mode (its transaction is
    the commit)."""
    with conn.transaction():
        written = write()
        if written is None:
            return unchanged()
    send_after_commit(conn, queue, written.job)
    return written.row


@dataclass(frozen=True)
class Relayed:
    sent: int
    refused: int  # the queue refused them, or their payload is unreadable: left for later


def relay_outbox(
    conn: psycopg.Connection[Any],
    queue: JobSender,
    older_than_seconds: float,
    batch_size: int = RELAY_BATCH_SIZE,
) -> Relayed:
    """Send one batch of outbox rows older than `older_than_seconds` that nobody sent, in one
    transaction holding their row locks (another relay skips them), and delete those sent.
    `conn` must be in autocommit mode, so the transaction is real."""
    outbox = OutboxRepository(conn)
    sent: list[UUID] = []
    refused: list[UUID] = []
    with conn.transaction():
        rows = outbox.lock_unsent(older_than_seconds, batch_size)
        for row in rows:
            try:
                job = job_from_payload(row.payload)
                queue.send(job)
            except (ValidationError, Unavailable) as exc:
                refused.append(row.outbox_id)
                logger.error(
                    "the relay could not send an outbox row",
                    extra={
                        "outbox_id": str(row.outbox_id),
                        "attempts": row.relay_attempts,
                        "error": str(exc),
                    },
                )
                continue
            sent.append(row.outbox_id)
            logger.warning(
                "the relay sent a job the API had not sent",
                extra={"outbox_id": str(row.outbox_id), "kind": job.kind},
            )
        if rows:
            outbox.settle(sent, refused)
    return Relayed(len(sent), len(refused))
