"""The outbox table (migrations/0009_outbox.sql): what the API deletes after its send and
what the relay reads and settles (gpudev/outbox.py owns the transactions)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from pydantic import BaseModel

from gpudev.db.constraints import domain_errors
from gpudev.db.queries import query
from gpudev.jobs import AnyJob, job_from_payload

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Outboxed:
    """A job written to the outbox with its change, not sent yet."""

    outbox_id: UUID
    job: AnyJob

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Outboxed | None:
        """From a statement's `outbox_id` and `outbox_payload` columns (NULL: no job)."""
        if row.get("outbox_id") is None:
            return None
        return cls(row["outbox_id"], job_from_payload(row["outbox_payload"]))


@dataclass(frozen=True)
class WithJob(Generic[M]):
    """A row a statement changed and the job it wrote to the outbox in the same statement
    (sent after commit)."""

    row: M
    job: Outboxed


def fetch_with_job(
    conn: psycopg.Connection[Any], name: str, model: type[M], params: Mapping[str, Any]
) -> WithJob[M] | None:
    """Run the statement `name`, which changes a row and writes its job to the outbox (such
    statements return a row only with its outbox row): the row as `model` with the job, None
    when nothing changed; a refused constraint raised as its domain error."""
    with domain_errors(), conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(query(name), params).fetchone()
    if row is None:
        return None
    job = Outboxed.from_row(row)
    assert job is not None, "a changed row comes with its outbox row"
    return WithJob(model.model_validate(row), job)


@dataclass(frozen=True)
class OutboxRow:
    outbox_id: UUID
    payload: Any  # JSONB as psycopg loads it; parsed by gpudev.jobs.job_from_payload
    relay_attempts: int


class OutboxRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def delete_sent(self, outbox_id: UUID) -> None:
        self._conn.execute(query("outbox/delete_sent"), {"outbox_id": outbox_id})

    def lock_unsent(self, older_than_seconds: float, batch_size: int) -> list[OutboxRow]:
        """The oldest rows nobody sent, locked until the caller's transaction ends (rows
        another transaction holds are skipped)."""
        rows = self._conn.execute(
            query("outbox/relay_batch"),
            {"older_than_seconds": older_than_seconds, "batch_size": batch_size},
        ).fetchall()
        return [OutboxRow(*row) for row in rows]

    def settle(self, sent: Sequence[UUID], refused: Sequence[UUID]) -> None:
        """Delete the rows sent; count an attempt on the rows refused."""
        self._conn.execute(
            query("outbox/relay_done"), {"sent": list(sent), "refused": list(refused)}
        )
