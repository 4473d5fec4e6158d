"""The availability updater: Auto Scaling + Kubernetes → `gpu_types`, in a constant number of
calls (Auto Scaling pages, one node list, one pod list) and one UPDATE for every type. The
same lists watch the active reservations' pods (`health.py`): OOM kills, crash loops and
warnings on the rows; a pod or node that is gone, or an evicted pod, wakes the reservation's
execution, which ends it with the reason. A warning that changed wakes it too: its checkpoint
writes the warning into the pod's ConfigMap, which the pod shows in its prompt banner (the
lifecycle stays the only writer of the reservation's objects)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg

from gpudev.availability.compute import (
    GpuTypeConfig,
    ScalingGroup,
    compute_availability,
    counted_group_name,
)
from gpudev.availability.health import plan_pod_health
from gpudev.cluster.vocabulary import Node, Pod
from gpudev.models import Availability, HealthRecorded
from gpudev.observability import logger
from gpudev.prepuller.service import PrepullerRun, refresh_prepuller
from gpudev.repositories import (
    GpuTypesRepository,
    PodHealthRepository,
    ReconcilerRunsRepository,
)
from gpudev.settings import cluster_settings, lifecycle_settings, prepuller_settings
from gpudev.signals import Signals, Wake
from gpudev.utilisation.exporter import Fetch, http_fetch
from gpudev.utilisation.service import UtilisationRun, record_utilisation, scrape

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

RECONCILER = "gpu_availability"


@dataclass(frozen=True)
class AvailabilityRun:
    run_id: int
    results: list[Availability]
    kubernetes_reachable: bool
    nodes_seen: int
    pods_seen: int
    health_findings: int = 0
    endings_woken: int = 0
    warnings_woken: int = 0
    utilisation: UtilisationRun | None = None
    addresses: dict[str, int] | None = None  # the EFA nodes' Elastic IPs (None: not run)
    prepuller: PrepullerRun | None = None  # the image pre-puller's step (None: not run)

    @property
    def statistics(self) -> dict[str, Any]:
        return (
            (self.utilisation.statistics if self.utilisation else {})
            | (self.addresses or {})
            | (self.prepuller.statistics if self.prepuller else {})
            | {
                "types_updated": len(self.results),
                "types_without_groups": sum(not r.groups_found for r in self.results),
                "kubernetes_reachable": self.kubernetes_reachable,
                "nodes": self.nodes_seen,
                "pods": self.pods_seen,
                "health_findings": self.health_findings,
                "endings_woken": self.endings_woken,
                "warnings_woken": self.warnings_woken,
            }
        )


def list_scaling_groups(autoscaling: Any) -> list[ScalingGroup]:
    groups = []
    for page in autoscaling.get_paginator("describe_auto_scaling_groups").paginate():
        for group in page["AutoScalingGroups"]:
            name = counted_group_name(group)
            if name is not None:
                groups.append(
                    ScalingGroup(
                        name=name,
                        desired_capacity=group["DesiredCapacity"],
                        max_size=group["MaxSize"],
                        in_service=sum(
                            i["LifecycleState"] == "InService" for i in group["Instances"]
                        ),
                    )
                )
    return groups


def _cluster_inventory(
    api_client: Callable[[], ApiClient],
) -> tuple[list[Node] | None, list[Pod] | None]:
    from gpudev.cluster.inventory import list_nodes_and_pods

    try:
        return list_nodes_and_pods(api_client())
    except Exception:
        logger.exception("Kubernetes unreachable: counting every GPU of running nodes as available")
        return None, None


def update_availability(
    conn: psycopg.Connection[Any],
    autoscaling: Any,
    api_client: Callable[[], ApiClient],
    signals: Signals,
    invoked_by: str,
    fetch: Fetch = http_fetch,
    ec2: Any = None,
    prepull: bool = True,
) -> AvailabilityRun:
    """Read Auto Scaling and the cluster, then, in one transaction, record the run, write
    every type's availability and finish the run: they commit together or not at all. A run
    that fails records itself as failed in a transaction of its own, so no run stays open.

    `conn` must have no transaction open (the handler's fresh pooled connection), so that
    `conn.transaction()` commits at the end of each block.

    With `ec2`, the nodes of EFA groups get their Elastic IPs first (`_node_addresses`).
    With `prepull` (and Kubernetes reachable), the image pre-puller's DaemonSet is kept
    pulling the images in use (gpudev/prepuller/), after everything else."""
    runs = ReconcilerRunsRepository(conn)
    try:
        # The calls out of AWS and Kubernetes come first: no transaction waits on them.
        groups = list_scaling_groups(autoscaling)
        listed_at = datetime.now(UTC)
        nodes, pods = _cluster_inventory(api_client)
        # ... and the GPU nodes' DCGM exporters (gpudev/utilisation/), as the lists say.
        scraped = scrape(nodes, fetch)
        addresses = _node_addresses(conn, ec2, nodes) if ec2 is not None else None
        with conn.transaction():
            run = runs.start(RECONCILER, invoked_by)
            gpu_types = GpuTypesRepository(conn)
            types = [GpuTypeConfig(t.gpu_type, t.max_per_node) for t in gpu_types.list_active()]
            results = compute_availability(
                types, groups, nodes, pods, cluster_settings().kubernetes_profiling_namespace
            )
            without_groups = [r.gpu_type for r in results if not r.groups_found]
            if without_groups:
                logger.warning(
                    "No ASGs found matching pattern", extra={"gpu_types": without_groups}
                )
            gpu_types.update_availability(results, invoked_by)
            findings, to_wake = _watch_pods(conn, nodes, pods, listed_at)
            endings = sum(row.health_ending is not None for row in to_wake)
            outcome = AvailabilityRun(
                run.run_id,
                results,
                nodes is not None,
                len(nodes or []),
                len(pods or []),
                health_findings=findings,
                endings_woken=endings,
                warnings_woken=len(to_wake) - endings,
                addresses=addresses,
            )
            runs.finish(run.run_id, "succeeded", outcome.statistics)
    except Exception as exc:
        with conn.transaction():
            runs.record(RECONCILER, invoked_by, "failed", f"{type(exc).__name__}: {exc}")
        raise
    _wake(signals, to_wake)
    # Its own transaction: the availability above stands whatever happens here.
    utilisation = record_utilisation(conn, nodes, pods, scraped, listed_at, signals)
    prepuller = None
    if prepull and nodes is not None:
        default_image = lifecycle_settings().pod_image
        prepuller = refresh_prepuller(conn, api_client, prepuller_settings(), default_image)
    return replace(outcome, utilisation=utilisation, prepuller=prepuller)


# The EFA nodes' Elastic IP step runs one at a time (sql/node_addresses/try_lock.sql).
NODE_ADDRESSES_LOCK_KEY = 7_216_004_037


def _node_addresses(
    conn: psycopg.Connection[Any], ec2: Any, nodes: list[Node] | None
) -> dict[str, int] | None:
    """An Elastic IP on each EFA node (cluster/addresses.py), unless another run is at it.
    Without the node list nothing is done; a failure is logged and left to the next run,
    never the availability's."""
    from gpudev.cluster.addresses import reconcile_node_addresses
    from gpudev.repositories.node_addresses import NodeAddressesLock

    if nodes is None:
        return None
    efa = [n.instance_id for n in nodes if n.placement_group and n.instance_id]
    lock = NodeAddressesLock(conn, NODE_ADDRESSES_LOCK_KEY)
    if not lock.try_take():
        return None
    try:
        return reconcile_node_addresses(ec2, efa).statistics
    except Exception:
        logger.exception("the EFA nodes' addresses were not reconciled")
        return None
    finally:
        lock.give_back()


def _watch_pods(
    conn: psycopg.Connection[Any],
    nodes: list[Node] | None,
    pods: list[Pod] | None,
    listed_at: datetime,
) -> tuple[int, list[HealthRecorded]]:
    """Record what the lists say of every active reservation's pods; the rows to wake: every
    recorded ending (so a wake that failed is sent again by the next run) and every row
    whose warning changed in this run (its checkpoint puts the warning in the pod's banner).
    Without the lists (Kubernetes unreachable) nothing is judged."""
    if nodes is None or pods is None:
        return 0, []
    health = PodHealthRepository(conn)
    watched = health.watched()
    findings = plan_pod_health(watched, nodes, pods, listed_at)
    before = {row.reservation_id: row.health_warning for row in watched}
    warned = {f.reservation_id for f in findings if f.health_warning != before[f.reservation_id]}
    recorded = {r.reservation_id: r for r in health.record(findings)}
    to_wake = {r for r, row in recorded.items() if row.health_ending or r in warned}
    for row in watched:
        if row.health_ending and row.reservation_id not in recorded:
            recorded[row.reservation_id] = HealthRecorded(
                reservation_id=row.reservation_id,
                task_token=row.task_token,
                health_ending=row.health_ending,
            )
            to_wake.add(row.reservation_id)
    if findings:
        logger.warning(
            "pod health changed",
            extra={"findings": [f.model_dump(mode="json") for f in findings]},
        )
    return len(findings), [recorded[r] for r in sorted(to_wake)]


def _wake(signals: Signals, rows: Sequence[HealthRecorded]) -> None:
    """After commit: wake each execution; its checkpoint reads the row (`health_ending`:
    end the reservation; `health_warning`: into the pod's ConfigMap). No token (between
    steps) or a closed one: its next step reads the row. A failed ending wake is sent again
    by the next run; a failed warning wake waits for the next checkpoint."""
    for row in rows:
        if row.task_token is None:
            continue
        try:
            signals.wake(row.task_token, Wake(outcome="changed"))
        except Exception:
            logger.exception(
                "waking a reservation failed",
                extra={"reservation_id": str(row.reservation_id)},
            )
