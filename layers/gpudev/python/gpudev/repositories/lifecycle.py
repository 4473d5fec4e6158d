"""The reservation state machine's reads and writes (`sql/lifecycle/`), and the nodes a
reservation was granted (`sql/allocation/placements.sql`, read only: the allocator writes
allocations).

Every write is conditional on the status it moves from and returns the row it wrote, or
None when nothing matched (the row moved on: cancelled, ended, or a retry after the
write). What None means is the task's to decide; the repository never commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from gpudev.cluster.names import Placement
from gpudev.db.queries import query
from gpudev.db.rows import fetch_one
from gpudev.models import NodeEndpoint, Reservation, ReservationStatus, TimelineEntry


class LifecycleRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def _write(self, name: str, params: dict[str, Any]) -> Reservation | None:
        return fetch_one(self._conn, f"lifecycle/{name}", Reservation, params)

    def start(self, reservation_id: UUID, execution_arn: str) -> Reservation | None:
        """The execution takes the reservation (its ARN recorded; pending becomes queued)."""
        return self._write(
            "start", {"reservation_id": reservation_id, "execution_arn": execution_arn}
        )

    def park(self, reservation_id: UUID, task_token: str) -> Reservation | None:
        """Store the token that wakes the execution; None once the reservation has ended."""
        return self._write("park", {"reservation_id": reservation_id, "task_token": task_token})

    def progress(self, reservation_id: UUID, detail: str) -> Reservation | None:
        """A preparing reservation's status line: why it is not ready yet (None if it
        said that already, or is no longer preparing)."""
        return self._write("progress", {"reservation_id": reservation_id, "detail": detail})

    def record_events(self, reservation_id: UUID, entries: Sequence[TimelineEntry]) -> None:
        """Timeline entries that are not status changes, in order, each once (by its key:
        one already recorded is skipped). One statement, none when there are none."""
        if not entries:
            return
        self._conn.execute(
            query("lifecycle/record_event"),
            {
                "reservation_id": reservation_id,
                "kind": [e.kind for e in entries],
                "detail": [e.detail for e in entries],
                "event_key": [e.key for e in entries],
            },
        )

    def waiting(self, reservation_id: UUID, line: str, prefix: str) -> Reservation | None:
        """A live reservation's status line says what it waits for (`line`), in front of
        what it said less any earlier such words (`prefix`, a regex); None if it said that
        already or has ended."""
        return self._write(
            "waiting", {"reservation_id": reservation_id, "line": line, "prefix": prefix}
        )

    def outage_over(self, reservation_id: UUID, prefix: str) -> Reservation | None:
        """The status line without the words `waiting` put in front (None: there were none)."""
        return self._write("outage_over", {"reservation_id": reservation_id, "prefix": prefix})

    def preparing(
        self,
        reservation_id: UUID,
        *,
        pod_name: str,
        namespace: str,
        jupyter_token: str,
        ssh_host_keys: list[str],
        ready_timeout_seconds: float,
        generation: int,
        keyless_users: list[str],
    ) -> Reservation | None:
        """Queued (granted) to preparing: the pod exists, ready by the deadline; the public
        halves of the host keys its sshd was given; the added users GitHub listed no keys
        for."""
        return self._write(
            "preparing",
            {
                "reservation_id": reservation_id,
                "pod_name": pod_name,
                "namespace": namespace,
                "jupyter_token": jupyter_token,
                "ssh_host_keys": ssh_host_keys,
                "ready_timeout_seconds": ready_timeout_seconds,
                "generation": generation,
                "keyless_users": keyless_users,
            },
        )

    def activate(
        self,
        reservation_id: UUID,
        *,
        seconds_per_hour: float,
        node_ip: str | None,
        node_port: int | None,
        node_address_kind: str,
        jupyter_available: bool,
        jupyter_error: str | None,
        ssh_nodes: list[NodeEndpoint],
    ) -> Reservation | None:
        """Preparing to active: launched now, with its SSH address (external or internal),
        every node's (`ssh_nodes`, by rank; node 0's is also `node_ip`/`node_port`) and
        whether its pod can serve Jupyter (and if not, why)."""
        return self._write(
            "activate",
            {
                "reservation_id": reservation_id,
                "seconds_per_hour": seconds_per_hour,
                "node_ip": node_ip,
                "node_port": node_port,
                "ssh_command": f"ssh -p {node_port} dev@{node_ip}",
                "node_address_kind": node_address_kind,
                "jupyter_available": jupyter_available,
                "jupyter_error": jupyter_error,
                "ssh_nodes": Jsonb([node.model_dump() for node in ssh_nodes]),
            },
        )

    def checkpoint(
        self,
        reservation_id: UUID,
        *,
        seconds_per_hour: float,
        warnings_sent: list[int],
        warning_text: str | None,
        jupyter_url: str | None,
        jupyter_port: int | None,
        generation: int,
        keyless_users: list[str],
    ) -> Reservation | None:
        """What a checkpoint applied to the pod (only while active), and the added users
        GitHub listed no keys for."""
        return self._write(
            "checkpoint",
            {
                "reservation_id": reservation_id,
                "seconds_per_hour": seconds_per_hour,
                "warnings_sent": warnings_sent,
                "warning_text": warning_text,
                "jupyter_url": jupyter_url,
                "jupyter_port": jupyter_port,
                "generation": generation,
                "keyless_users": keyless_users,
            },
        )

    def end(
        self, reservation_id: UUID, status: ReservationStatus, detail: str
    ) -> Reservation | None:
        """The final status, once: None if the reservation had already ended."""
        return self._write(
            "end", {"reservation_id": reservation_id, "status": str(status), "detail": detail}
        )

    def placements(self, reservation_id: UUID) -> list[Placement]:
        """The reservation's nodes by rank, with their addresses."""
        with self._conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(
                query("allocation/placements"), {"reservation_id": reservation_id}
            ).fetchall()
        return [
            Placement(
                r["rank"],
                r["node_name"],
                r["node_ip"],
                r["slots"],
                r["external_address"],
                r["profiling"],
            )
            for r in rows
        ]
