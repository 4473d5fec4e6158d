"""Utilisation, collected: the availability updater hands each run's node and pod lists
here; the GPU nodes' DCGM exporters are scraped (before any transaction), their readings
mapped to reservations through the pods the exporter names, and, in one transaction under
an advisory lock, the samples and hourly rollups written and idle reclaim decided
(idle.py). Warnings and endings wake the reservation's execution after commit: its
checkpoint puts a warning in the pod's banner and ends a reservation with its idle ending,
as it does with the updater's pod health."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg

from gpudev.cluster.vocabulary import Node, Pod
from gpudev.observability import logger
from gpudev.repositories.utilisation import UtilisationRepository
from gpudev.settings import IdleSettings, idle_settings, lifecycle_settings
from gpudev.signals import Signals, Wake
from gpudev.utilisation.exporter import (
    Fetch,
    GpuReading,
    Scrape,
    http_fetch,
    readings_by_reservation,
    scrape_gpu_nodes,
)
from gpudev.utilisation.idle import IdleRules, Seen, parse_policy, plan_idle
from gpudev.utilisation_rows import IdleRecorded, Sample

# The updater's schedule (cdk_app/declaration.py, rate(1 minute)): a first sample's weight.
PERIOD_SECONDS = 60.0
WINDOW_CLOCK_HOURS = 2  # recent samples kept: `show` draws the last clock hour


@dataclass(frozen=True)
class UtilisationRun:
    locked: bool
    nodes_scraped: int
    nodes_failed: int
    samples: int = 0
    pruned: int = 0
    warned: int = 0
    ended: int = 0
    busy_gpus: dict[str, int] | None = None  # by GPU type, for the held-vs-used metric

    @property
    def statistics(self) -> dict[str, Any]:
        return {
            "utilisation_locked": self.locked,
            "exporters_scraped": self.nodes_scraped,
            "exporters_failed": self.nodes_failed,
            "gpu_samples": self.samples,
            "gpu_samples_pruned": self.pruned,
            "idle_warned": self.warned,
            "idle_ended": self.ended,
        }


def scrape(nodes: Sequence[Node] | None, fetch: Fetch = http_fetch) -> Scrape:
    """Every GPU node's exporter (no transaction open: this waits on the network)."""
    settings = idle_settings()
    if not nodes:
        return Scrape([], frozenset(), frozenset())
    return scrape_gpu_nodes(
        nodes, settings.dcgm_exporter_url, settings.dcgm_scrape_timeout_seconds, fetch
    )


def rules_of(settings: IdleSettings, seconds_per_hour: float) -> IdleRules:
    return IdleRules(
        seconds_per_hour=seconds_per_hour,
        grace_minutes=settings.grace_minutes,
        first_minutes=settings.first_minutes,
        policies=parse_policy(settings.reclaim_policy),
    )


def observe(
    pods: Sequence[Pod], scraped: Scrape, busy_percent: float
) -> tuple[dict[UUID, Seen], dict[str, list[GpuReading]]]:
    """Each reservation with pods: busy, idle, or unseen (a node of its pods whose exporter
    did not answer, or fewer GPUs reported than its pods hold: not looked at is not idle)."""
    ours = [p for p in pods if p.reservation_id and p.name]
    by_reservation = readings_by_reservation(
        scraped.readings, {(p.namespace, p.name): str(p.reservation_id) for p in ours}
    )
    pods_of: dict[str, list[Pod]] = {}
    for pod in ours:
        assert pod.reservation_id is not None
        pods_of.setdefault(pod.reservation_id, []).append(pod)
    seen: dict[UUID, Seen] = {}
    for reservation, own in pods_of.items():
        readings = by_reservation.get(reservation, [])
        held = sum(p.gpu_requests for p in own)
        answered = all(p.node_name in scraped.nodes_answered for p in own)
        if not answered or held == 0 or len(readings) < held:
            seen[UUID(reservation)] = Seen.UNSEEN
        elif any(r.util_percent >= busy_percent for r in readings):
            seen[UUID(reservation)] = Seen.BUSY
        else:
            seen[UUID(reservation)] = Seen.IDLE
    return seen, by_reservation


def record_utilisation(
    conn: psycopg.Connection[Any],
    nodes: Sequence[Node] | None,
    pods: Sequence[Pod] | None,
    scraped: Scrape,
    now: datetime,
    signals: Signals,
) -> UtilisationRun:
    """Samples, rollups and idle decisions of one run, in one transaction; then the wakes.
    Without the pod list (Kubernetes unreachable) nothing is written or judged."""
    settings = idle_settings()
    seconds_per_hour = lifecycle_settings().seconds_per_hour
    scraped_counts = (len(scraped.nodes_answered), len(scraped.nodes_failed))
    if pods is None or nodes is None:
        return UtilisationRun(False, *scraped_counts)
    seen, by_reservation = observe(pods, scraped, settings.busy_percent)
    repo = UtilisationRepository(conn)
    with conn.transaction():
        if not repo.try_lock():
            return UtilisationRun(False, *scraped_counts)
        samples = [
            Sample(UUID(reservation), r.key, r.util_percent, r.memory_used_mib)
            for reservation, readings in by_reservation.items()
            for r in readings
        ]
        written = repo.record_samples(
            samples,
            now,
            period_seconds=PERIOD_SECONDS,
            window_seconds=WINDOW_CLOCK_HOURS * seconds_per_hour,
            busy_percent=settings.busy_percent,
        )
        candidates = repo.candidates()
        changes = plan_idle(candidates, seen, rules_of(settings, seconds_per_hour), now)
        recorded = repo.record_idle(changes, candidates)
    pending_endings = [
        IdleRecorded(c.reservation_id, c.task_token, c.idle_ending, False)
        for c in candidates
        if c.idle_ending is not None
    ]
    woken = [r for r in recorded if r.warning_changed or r.idle_ending] + pending_endings
    _wake(signals, woken)
    decided = [c for c in changes if c.warning or c.ending or c.clear_warning]
    if decided:
        logger.info("idle reclaim", extra={"changes": [repr(c) for c in decided]})
    return UtilisationRun(
        True,
        *scraped_counts,
        samples=written.samples,
        pruned=written.pruned,
        warned=sum(1 for c in changes if c.warning),
        ended=sum(1 for c in changes if c.ending),
        busy_gpus=busy_gpus_by_type(nodes, by_reservation, settings.busy_percent),
    )


def busy_gpus_by_type(
    nodes: Sequence[Node], by_reservation: dict[str, list[GpuReading]], busy_percent: float
) -> dict[str, int]:
    """Reservations' GPUs in use, per GPU type (the dashboard's held vs used)."""
    type_of = {n.name: n.gpu_type for n in nodes}
    busy: dict[str, int] = {}
    for readings in by_reservation.values():
        for r in readings:
            gpu_type = type_of.get(r.node)
            if gpu_type and r.util_percent >= busy_percent:
                busy[gpu_type] = busy.get(gpu_type, 0) + 1
    return busy


def _wake(signals: Signals, rows: Sequence[IdleRecorded]) -> None:
    for row in rows:
        if row.task_token is None:
            continue  # between steps: its next checkpoint reads the row
        try:
            signals.wake(row.task_token, Wake(outcome="changed"))
        except Exception:
            logger.exception(
                "waking an idle reservation failed",
                extra={"reservation_id": str(row.reservation_id)},
            )
