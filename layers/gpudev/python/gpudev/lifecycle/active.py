"""The active loop: a checkpoint applies the row's desired state to the pod (expiry,
warnings, keys, Jupyter) and says how long to park; parking waits for the next checkpoint
or a wake-up (cancel, extend, add or remove a user, Jupyter, a pod the availability
updater saw go)."""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from gpudev.cluster import objects
from gpudev.cluster.names import Names
from gpudev.lifecycle.payloads import Checkpoint, CheckpointOutput, WaitWhileActive
from gpudev.lifecycle.schedule import Active, Due
from gpudev.lifecycle.tasks import Lifecycle, written
from gpudev.lifecycle.wakes import coalesced, park_seconds
from gpudev.models import Reservation, ReservationStatus
from gpudev.repositories.change_wakes import ChangeWakesRepository
from gpudev.signals import Wake


def checkpoint(lc: Lifecycle, task: Checkpoint) -> CheckpointOutput:
    """Apply changes, send the warnings now due, expire when due; else say how long to park
    until the next checkpoint. The expiry is checked before any Kubernetes call, so a
    reservation expires on time while Kubernetes fails."""
    reservation = lc.reservation(task.reservation_id)
    if reservation.cancel_requested_at is not None:
        return CheckpointOutput(outcome="cancel")
    if reservation.status != ReservationStatus.ACTIVE or reservation.launched_at is None:
        return CheckpointOutput(outcome="gone")
    if reservation.health_ending is not None:  # the availability updater saw its pod go
        return CheckpointOutput(outcome="failed", reason=reservation.health_ending)
    if reservation.idle_ending is not None:  # the updater saw its GPUs idle (utilisation/)
        return CheckpointOutput(outcome="idle", reason=reservation.idle_ending)
    due = lc.schedule.check(_active(reservation), lc.clock())
    if due.expired:
        return CheckpointOutput(outcome="expire")
    applied = reservation.change_generation > reservation.applied_generation
    secret = _apply(lc, reservation, due)
    jupyter_url, jupyter_port = _jupyter(lc, reservation)
    written(
        lc.rows.checkpoint(
            task.reservation_id,
            seconds_per_hour=lc.settings.seconds_per_hour,
            warnings_sent=list(due.warnings_sent),
            warning_text=due.warning_text,
            jupyter_url=jupyter_url,
            jupyter_port=jupyter_port,
            generation=reservation.change_generation,
            keyless_users=objects.keyless_users(secret, reservation.secondary_users),
        ),
        "checkpoint",
    )
    wakes = ChangeWakesRepository(lc.conn)
    since = None if applied else wakes.seconds_since(task.reservation_id)
    if applied:
        wakes.record(task.reservation_id)
    bound = lc.schedule.minutes(lc.settings.change_wake_minutes)
    seconds = park_seconds(
        due.park_seconds, applied=applied, seconds_since=since, bound_seconds=bound
    )
    return CheckpointOutput(outcome="park", seconds=seconds)


def wait_while_active(lc: Lifecycle, task: WaitWhileActive) -> None:
    """Park until the next checkpoint (the state's timeout) or a wake-up; wake at once if a
    change, a cancel or a pod health ending arrived while no token was stored. A change
    within the bound of the last one is left to the checkpoint due by then (wakes.py)."""
    row = lc.rows.park(task.reservation_id, task.task_token)
    if (
        row is None
        or row.cancel_requested_at is not None
        or row.health_ending is not None
        or row.idle_ending is not None
    ):
        lc.signals.wake(task.task_token, Wake(outcome="changed"))
    elif row.change_generation > row.applied_generation:
        since = ChangeWakesRepository(lc.conn).seconds_since(task.reservation_id)
        if not coalesced(since, lc.schedule.minutes(lc.settings.change_wake_minutes)):
            lc.signals.wake(task.task_token, Wake(outcome="changed"))


def _active(reservation: Reservation) -> Active:
    assert reservation.launched_at is not None
    return Active(
        short_id=str(reservation.reservation_id)[:8],
        launched_at=reservation.launched_at.timestamp(),
        duration_hours=reservation.duration_hours,
        recorded_expiry=reservation.expires_at.timestamp() if reservation.expires_at else None,
        warnings_sent=tuple(reservation.warnings_sent),
        warning_text=reservation.warning_text,
    )


def _apply(lc: Lifecycle, reservation: Reservation, due: Due) -> dict[str, Any]:
    """The pod's control objects from the row: expiry, warnings (the schedule's and the
    availability updater's pod health), Jupyter, keys (refreshed from GitHub; an added user
    taken off the row loses their entry, and the pod's control loop their account). Returns
    the keys Secret as it now is."""
    cluster = lc.objects(reservation)
    expires_at = datetime.fromtimestamp(due.expires_at).astimezone().isoformat()
    cluster.replace(
        objects.control_config_map(
            reservation,
            expires_at,
            due.warning_level,
            due.warning_text or "",
            # the updater's pod health and idle warnings; it wakes us when they change
            "; ".join(filter(None, (reservation.health_warning, reservation.idle_warning))),
        )
    )
    # Keys follow GitHub at every checkpoint, not only at a change: a key deleted there
    # stops opening the pod at the next one. The Secret is written only when it differs.
    current = cluster.read("Secret", Names.of(reservation).keys)
    installed = {
        entry: base64.b64decode(value).decode()
        for entry, value in ((current or {}).get("data") or {}).items()
    }
    secret = lc.keys_secret(reservation, installed)
    if (
        secret["stringData"] != installed
        or reservation.change_generation > reservation.applied_generation
    ):
        cluster.replace(secret)
    return secret


def _jupyter(lc: Lifecycle, reservation: Reservation) -> tuple[str | None, int | None]:
    """Jupyter's URL, only when it is on and node 0's check said the pod's image has it
    (never a dead URL; the view gives `jupyter_error` instead). Jupyter listens on the pod's
    loopback, so the URL is the one the owner opens through SSH (`gpu-dev connect --jupyter`
    forwards a local port to it); an unknown verdict (None) is a pod started before the
    check existed, whose startup script still serves Jupyter. A reservation made before
    Jupyter moved behind SSH has a NodePort Service recorded (`jupyter_port`): it goes."""
    if reservation.jupyter_port is not None:
        lc.objects(reservation).delete_all(
            str(reservation.reservation_id), ("services",), Names.of(reservation).jupyter_service
        )
    if not reservation.jupyter_enabled or reservation.jupyter_available is False:
        return None, None
    url = f"http://localhost:{objects.JUPYTER_PORT}/lab?token={reservation.jupyter_token}"
    return url, None
