"""The tasks of the reservation state machine (statemachines/reservation.asl.json).

Each task reads the reservation row, acts, writes what it did and returns an outcome the
state machine branches on. Every task is safe to run twice (Step Functions retries): objects
that exist are left alone, status updates are conditional, tear down is idempotent. A cancel
request is honoured at every step, so a cancel between two task tokens is never lost.
"""

from __future__ import annotations

import json
import math
import secrets
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import class_row, dict_row

from gpudev.allocation.service import Allocator, AllocatorReport, release_allocation
from gpudev.cluster import objects
from gpudev.cluster.inventory import list_nodes_and_pods
from gpudev.cluster.names import Names, Placement
from gpudev.cluster.objects_client import ReservationObjects
from gpudev.cluster.pod_readiness import pods_state
from gpudev.db.queries import query
from gpudev.errors import NotFound
from gpudev.lifecycle.keys import GithubKeys
from gpudev.lifecycle.taxonomy import StateChanged
from gpudev.models import Reservation, ReservationStatus
from gpudev.observability import logger
from gpudev.repositories import GpuTypesRepository, ReservationsRepository
from gpudev.settings import LifecycleSettings
from gpudev.signals import Signals

ENDINGS = {
    "expire": (ReservationStatus.EXPIRED, "expired"),
    "cancel": (ReservationStatus.CANCELLED, "cancelled by the user"),
    "stale": (ReservationStatus.CANCELLED, "stale: waited too long for capacity"),
}


@dataclass
class Lifecycle:
    conn: psycopg.Connection[Any]
    api_client: Any  # kubernetes.client.ApiClient
    signals: Signals
    keys: GithubKeys
    settings: LifecycleSettings
    namespace: str
    # Profiling pods carry CAP_SYS_ADMIN, which Pod Security `baseline` (enforced on
    # `namespace`) refuses: they live in a namespace that allows it (deploy/kubernetes).
    profiling_namespace: str

    def namespace_of(self, reservation: Reservation) -> str:
        return self.profiling_namespace if reservation.profiling else self.namespace

    def objects(self, reservation: Reservation) -> ReservationObjects:
        return ReservationObjects(self.api_client, self.namespace_of(reservation))

    # -- rows ------------------------------------------------------------------------------
    def _row(self, name: str, **params: Any) -> Reservation | None:
        with self.conn.cursor(row_factory=class_row(Reservation)) as cur:
            return cur.execute(query(f"lifecycle/{name}"), params).fetchone()

    def _write(self, name: str, **params: Any) -> Reservation:
        """A conditional write that must match: if it does not, the row moved on (cancelled,
        ended) and the task is retried, reading the row afresh."""
        row = self._row(name, **params)
        if row is None:
            raise StateChanged(f"lifecycle/{name} matched nothing: the reservation changed")
        return row

    def reservation(self, reservation_id: UUID) -> Reservation:
        found = ReservationsRepository(self.conn).get(reservation_id)
        if found is None:
            raise NotFound(f"no reservation {reservation_id}")
        return found

    def placements(self, reservation_id: UUID) -> list[Placement]:
        with self.conn.cursor(row_factory=dict_row) as cur:
            rows = cur.execute(
                query("allocation/placements"), {"reservation_id": reservation_id}
            ).fetchall()
        return [Placement(r["rank"], r["node_name"], r["node_ip"], r["slots"]) for r in rows]

    def allocate(self) -> AllocatorReport:
        """One allocator pass (the allocator is the only writer of allocations)."""
        nodes, pods = list_nodes_and_pods(self.api_client)
        cpu_types = {
            t.gpu_type for t in GpuTypesRepository(self.conn).list_active() if t.is_cpu_only
        }
        return Allocator(self.conn, self.signals, self.settings).run(nodes, pods, cpu_types)

    def allocate_for_the_queue(self) -> None:
        """An allocator pass run on behalf of the queue (after a park or a release): it never
        fails this task, since what it does is for other reservations and the scheduled
        allocator runs the same pass every minute."""
        try:
            self.allocate()
        except Exception:
            logger.warning("allocator pass failed; the scheduled pass retries", exc_info=True)

    # -- tasks -----------------------------------------------------------------------------
    def start(self, reservation_id: UUID, execution_arn: str) -> dict[str, Any]:
        row = self._row("start", reservation_id=reservation_id, execution_arn=execution_arn)
        if row is None or row.status.is_final:
            return {"outcome": "gone"}
        if row.cancel_requested_at is not None:
            return {"outcome": "cancel"}
        return {
            "outcome": "queue",
            "queue_timeout_seconds": math.ceil(
                self.settings.queue_timeout_hours * self.settings.seconds_per_hour
            ),
            "ready_poll_seconds": self.settings.ready_poll_seconds,
            "fault_retry_seconds": max(
                1, math.ceil(self.settings.minutes(self.settings.fault_retry_minutes))
            ),
        }

    def wait_for_capacity(self, reservation_id: UUID, task_token: str) -> None:
        """Park on the token, then run an allocator pass, which wakes us if we fit.

        A grant made before this token was stored was signalled to an earlier token (an
        attempt of this state that failed after parking, retried with a new token): the
        allocator counts it as told, so this token is woken here, or nobody would."""
        row = self._row("park", reservation_id=reservation_id, task_token=task_token)
        if row is None or row.cancel_requested_at is not None:
            self.signals.wake(task_token, {"outcome": "cancel"})
            return
        if row.granted_at is not None:
            logger.info("granted before this token was stored: waking it")
            self.signals.wake(task_token, {"outcome": "granted"})
            return
        self.allocate_for_the_queue()

    def provision(self, reservation_id: UUID) -> dict[str, Any]:
        reservation = self.reservation(reservation_id)
        if reservation.cancel_requested_at is not None:
            return {"outcome": "cancel"}
        placements = self.placements(reservation_id)
        if len(placements) != reservation.total_nodes:
            raise RuntimeError(
                f"{len(placements)} of {reservation.total_nodes} nodes are allocated"
            )
        gpu_type = GpuTypesRepository(self.conn).get(reservation.gpu_type)
        assert gpu_type is not None
        token = reservation.jupyter_token or secrets.token_hex(32)
        reservation = reservation.model_copy(update={"jupyter_token": token})
        cluster = self.objects(reservation)
        cluster.create(objects.network_policy(reservation))
        cluster.create(objects.control_config_map(reservation, "", None, ""))
        cluster.create(self._keys_secret(reservation))
        cluster.create(objects.headless_service(reservation))
        cluster.create(objects.ssh_service(reservation))
        for placement in placements:
            cluster.create(objects.pod(reservation, gpu_type, placement, self.settings.pod_image))
        self._write(
            "preparing",
            reservation_id=reservation_id,
            pod_name=Names.of(reservation).pod(0),
            namespace=self.namespace_of(reservation),
            jupyter_token=token,
            ready_timeout_seconds=self.settings.ready_timeout_seconds,
            generation=reservation.change_generation,
        )
        return {"outcome": "provisioning"}

    def check_ready(self, reservation_id: UUID) -> dict[str, Any]:
        reservation = self.reservation(reservation_id)
        if reservation.cancel_requested_at is not None:
            return {"outcome": "cancel"}
        cluster = self.objects(reservation)
        state = pods_state(cluster.pods(str(reservation_id)), reservation.total_nodes)
        if not state.ready:
            if state.failed:
                return {"outcome": "failed", "reason": f"the pod did not start: {state.problem}"}
            deadline = reservation.ready_deadline
            if deadline is not None and time.time() > deadline.timestamp():
                return {
                    "outcome": "failed",
                    "reason": f"the pod was not ready in time: {state.problem}",
                }
            return {"outcome": "waiting", "detail": state.problem}
        node_port = cluster.node_port(str(reservation_id), Names.of(reservation).ssh_service)
        node_ip = self.placements(reservation_id)[0].node_ip
        activated = self._row(
            "activate",
            reservation_id=reservation_id,
            seconds_per_hour=self.settings.seconds_per_hour,
            node_ip=node_ip,
            node_port=node_port,
            ssh_command=f"ssh -p {node_port} dev@{node_ip}",
        )
        # Nothing matched: a retry after the write (fine), or the row moved on (read again).
        status = activated.status if activated else self.reservation(reservation_id).status
        if status != ReservationStatus.ACTIVE:
            raise StateChanged("the reservation left 'preparing' while its pod started")
        return {"outcome": "ready"}

    def checkpoint(self, reservation_id: UUID) -> dict[str, Any]:
        """Apply changes, send the warnings now due, expire when due; else say how long
        to park until the next checkpoint."""
        reservation = self.reservation(reservation_id)
        if reservation.cancel_requested_at is not None:
            return {"outcome": "cancel"}
        if reservation.status != ReservationStatus.ACTIVE or reservation.launched_at is None:
            return {"outcome": "gone"}
        settings = self.settings
        expires = reservation.launched_at.timestamp() + (
            reservation.duration_hours * settings.seconds_per_hour
        )
        now = time.time()
        if now >= expires:
            return {"outcome": "expire"}
        extended = reservation.expires_at is not None and expires > (
            reservation.expires_at.timestamp() + 0.5
        )
        sent = [] if extended else list(reservation.warnings_sent)
        minutes_left = (expires - now) / settings.minutes(1)
        due = [m for m in settings.warning_minutes if minutes_left <= m and m not in sent]
        sent += due
        text = warning_text(reservation, minutes_left) if due else None
        if not due and not extended:
            text = reservation.warning_text  # the last warning stays on show
        self._apply(reservation, expires, min(sent) if sent else None, text or "")
        jupyter_url, jupyter_port = self._jupyter(reservation)
        self._write(
            "checkpoint",
            reservation_id=reservation_id,
            seconds_per_hour=settings.seconds_per_hour,
            warnings_sent=sent,
            warning_text=text or None,
            jupyter_url=jupyter_url,
            jupyter_port=jupyter_port,
            generation=reservation.change_generation,
        )
        upcoming = [
            expires - settings.minutes(m)
            for m in settings.warning_minutes
            if m not in sent and expires - settings.minutes(m) > now
        ]
        next_at = min([*upcoming, expires])
        return {"outcome": "park", "seconds": max(1, math.ceil(next_at - now))}

    def wait_while_active(self, reservation_id: UUID, task_token: str) -> None:
        """Park until the next checkpoint (the state's timeout) or a wake-up; wake at once
        if a change or a cancel arrived while no token was stored."""
        row = self._row("park", reservation_id=reservation_id, task_token=task_token)
        if (
            row is None
            or row.cancel_requested_at is not None
            or row.change_generation > row.applied_generation
        ):
            self.signals.wake(task_token, {"outcome": "changed"})

    def tear_down(self, reservation_id: UUID, ending: dict[str, Any]) -> dict[str, Any]:
        """Delete every labelled object, release the allocation, record the ending once,
        and let the queue move."""
        status, detail = _ending(ending)
        deleted = self.objects(self.reservation(reservation_id)).delete_all(str(reservation_id))
        with self.conn.transaction():
            release_allocation(self.conn, reservation_id)
            ended = self._row(
                "end", reservation_id=reservation_id, status=str(status), detail=detail
            )
        final = ended.status if ended else self.reservation(reservation_id).status
        logger.info(
            "reservation torn down",
            extra={"reservation_id": str(reservation_id), "status": final, "objects": deleted},
        )
        self.allocate_for_the_queue()
        return {"status": str(final), "objects_deleted": deleted}

    # -- helpers ---------------------------------------------------------------------------
    def _keys_secret(self, reservation: Reservation) -> dict[str, Any]:
        owner = [reservation.github_user] if reservation.github_user else []
        return objects.keys_secret(
            reservation,
            self.keys.authorized_keys(owner),
            {user: self.keys.authorized_keys([user]) for user in reservation.secondary_users},
        )

    def _apply(
        self, reservation: Reservation, expires: float, level: int | None, text: str
    ) -> None:
        """The pod's control objects from the row: expiry, warning, Jupyter, keys."""
        cluster = self.objects(reservation)
        expires_at = datetime.fromtimestamp(expires).astimezone().isoformat()
        cluster.replace(objects.control_config_map(reservation, expires_at, level, text))
        if reservation.change_generation > reservation.applied_generation:
            cluster.replace(self._keys_secret(reservation))

    def _jupyter(self, reservation: Reservation) -> tuple[str | None, int | None]:
        cluster = self.objects(reservation)
        name = Names.of(reservation).jupyter_service
        if not reservation.jupyter_enabled:
            cluster.delete_all(str(reservation.reservation_id), ("services",), name)
            return None, None
        cluster.create(objects.jupyter_service(reservation))
        port = cluster.node_port(str(reservation.reservation_id), name)
        url = f"http://{reservation.node_ip}:{port}/lab?token={reservation.jupyter_token}"
        return url, port


def warning_text(reservation: Reservation, minutes_left: float) -> str:
    short = str(reservation.reservation_id)[:8]
    minutes = max(0, math.floor(minutes_left))
    if minutes < 1:
        return f"URGENT: reservation {short} expires in less than a minute. Save your work now!"
    if minutes_left <= 5:
        return f"WARNING: reservation {short} expires in {minutes} minutes. Save your work!"
    if minutes_left <= 15:
        return f"NOTICE: reservation {short} expires in {minutes} minutes. Please save your work."
    return (
        f"INFO: reservation {short} expires in {minutes} minutes "
        f"(gpu-dev extend {short} -h 1 for more time)."
    )


def _ending(ending: dict[str, Any]) -> tuple[ReservationStatus, str]:
    """The final status and its reason, from what the state machine passes."""
    kind = ending.get("kind", "failed")
    if kind in ENDINGS:
        return ENDINGS[kind]
    reason = ending.get("reason")
    error = ending.get("error") or {}
    if not reason and error:
        reason = _error_reason(error)
    return ReservationStatus.FAILED, reason or "failed"


def _error_reason(error: dict[str, Any]) -> str:
    """A Step Functions error (Error, Cause) as one line; Lambda causes are JSON."""
    cause = error.get("Cause") or ""
    try:
        parsed = json.loads(cause)
        message = parsed.get("errorMessage") if isinstance(parsed, dict) else None
    except (TypeError, ValueError):
        message = cause or None
    name = error.get("Error") or "error"
    return f"{name}: {message}" if message else str(name)
