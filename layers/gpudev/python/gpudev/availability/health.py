"""Pod health, watched (pure): the pods and nodes one updater run listed, and the active
reservations, → what to record for each reservation whose health changed.

- An OOM kill: a container's `lastState.terminated.reason` is OOMKilled and the pods'
  restart count is above the one recorded, so one kill is counted once.
- A crash loop: a container waits in CrashLoopBackOff (a warning).
- An ending: an evicted pod (phase Failed, e.g. reason Evicted), a pod being deleted or
  gone, or a pod whose node is gone. The reservation's execution ends it with the reason.

A reservation launched after the pods were listed is judged by the next run: its pods may
not be in this list.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gpudev.cluster.vocabulary import LIVE_POD_PHASES, Node, Pod
from gpudev.models import PodHealth, WatchedReservation


def plan_pod_health(
    reservations: Sequence[WatchedReservation],
    nodes: Sequence[Node],
    pods: Sequence[Pod],
    listed_at: datetime,
) -> list[PodHealth]:
    node_names = {n.name for n in nodes}
    not_ready = {n.name for n in nodes if not n.ready}
    by_reservation: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.reservation_id:
            by_reservation.setdefault(pod.reservation_id, []).append(pod)
    findings = []
    for reservation in reservations:
        if reservation.launched_at is None or reservation.launched_at > listed_at:
            continue
        own = by_reservation.get(str(reservation.reservation_id), [])
        finding = _health(reservation, own, node_names, not_ready)
        if _changed(reservation, finding):
            findings.append(finding)
    return findings


def _ending(total_nodes: int, pods: list[Pod], node_names: set[str]) -> str | None:
    for pod in pods:
        if pod.phase not in LIVE_POD_PHASES:
            why = pod.reason or pod.phase
            return f"pod {pod.name} {why.lower()}: {pod.message or 'no message'}"
    for pod in pods:
        if pod.terminating_until is not None:
            return f"pod {pod.name} was deleted"
        if pod.node_name and pod.node_name not in node_names:
            return f"node {pod.node_name} of pod {pod.name} is gone"
    missing = total_nodes - len(pods)
    if missing > 0:
        return f"{missing} of {total_nodes} pods gone (deleted outside gpu-dev)"
    return None


def _health(
    reservation: WatchedReservation, pods: list[Pod], node_names: set[str], not_ready: set[str]
) -> PodHealth:
    restarts = sum(p.restarts for p in pods)
    oom_at = max((p.last_oom_at for p in pods if p.last_oom_at), default=None)
    new_oom = (
        oom_at is not None
        and restarts > reservation.pod_restarts
        and (reservation.last_oom_at is None or oom_at > reservation.last_oom_at)
    )
    ooms = reservation.oom_count + int(new_oom)
    last_oom_at = oom_at if new_oom else reservation.last_oom_at
    ending = _ending(reservation.total_nodes, pods, node_names)
    warnings = [ending] if ending else []
    if ooms:
        assert last_oom_at is not None
        warnings.append(
            f"out of memory: the container was OOM-killed {ooms} time(s), "
            f"last at {last_oom_at.isoformat(timespec='seconds')}"
        )
    warnings += [
        f"pod {p.name} is crash-looping (CrashLoopBackOff)" for p in pods if p.crash_looping
    ]
    warnings += [f"node {p.node_name} is not Ready" for p in pods if p.node_name in not_ready]
    return PodHealth(
        reservation_id=reservation.reservation_id,
        new_ooms=int(new_oom),
        last_oom_at=oom_at if new_oom else None,
        pod_restarts=max(restarts, reservation.pod_restarts),
        health_warning="; ".join(warnings) or None,
        health_ending=ending,
    )


def _changed(reservation: WatchedReservation, finding: PodHealth) -> bool:
    return bool(
        finding.new_ooms
        or finding.pod_restarts != reservation.pod_restarts
        or finding.health_warning != reservation.health_warning
        or (finding.health_ending and not reservation.health_ending)
    )
