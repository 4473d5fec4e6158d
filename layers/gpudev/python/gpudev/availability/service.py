"""The availability updater: Auto Scaling + Kubernetes → `gpu_types`, in a constant number of
calls (Auto Scaling pages, one node list, one pod list) and one UPDATE for every type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg

from gpudev.availability.compute import (
    GpuTypeConfig,
    ScalingGroup,
    compute_availability,
)
from gpudev.cluster.vocabulary import Node, Pod
from gpudev.models import Availability
from gpudev.observability import logger
from gpudev.repositories import GpuTypesRepository, ReconcilerRunsRepository

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

GROUP_NAME_PREFIX = "pytorch-gpu-dev-"
RECONCILER = "gpu_availability"


@dataclass(frozen=True)
class AvailabilityRun:
    run_id: int
    results: list[Availability]
    kubernetes_reachable: bool
    nodes_seen: int
    pods_seen: int

    @property
    def statistics(self) -> dict[str, Any]:
        return {
            "types_updated": len(self.results),
            "types_without_groups": sum(not r.groups_found for r in self.results),
            "kubernetes_reachable": self.kubernetes_reachable,
            "nodes": self.nodes_seen,
            "pods": self.pods_seen,
        }


def list_scaling_groups(autoscaling: Any) -> list[ScalingGroup]:
    groups = []
    for page in autoscaling.get_paginator("describe_auto_scaling_groups").paginate():
        for group in page["AutoScalingGroups"]:
            if group["AutoScalingGroupName"].startswith(GROUP_NAME_PREFIX):
                groups.append(
                    ScalingGroup(
                        name=group["AutoScalingGroupName"],
                        desired_capacity=group["DesiredCapacity"],
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
    invoked_by: str,
) -> AvailabilityRun:
    """Read Auto Scaling and the cluster, then, in one transaction, record the run, write
    every type's availability and finish the run: they commit together or not at all. A run
    that fails records itself as failed in a transaction of its own, so no run stays open.

    `conn` must have no transaction open (the handler's fresh pooled connection), so that
    `conn.transaction()` commits at the end of each block."""
    runs = ReconcilerRunsRepository(conn)
    try:
        # The calls out of AWS and Kubernetes come first: no transaction waits on them.
        groups = list_scaling_groups(autoscaling)
        nodes, pods = _cluster_inventory(api_client)
        with conn.transaction():
            run = runs.start(RECONCILER, invoked_by)
            gpu_types = GpuTypesRepository(conn)
            types = [GpuTypeConfig(t.gpu_type, t.max_per_node) for t in gpu_types.list_active()]
            results = compute_availability(types, groups, nodes, pods)
            without_groups = [r.gpu_type for r in results if not r.groups_found]
            if without_groups:
                logger.warning(
                    "No ASGs found matching pattern", extra={"gpu_types": without_groups}
                )
            gpu_types.update_availability(results, invoked_by)
            outcome = AvailabilityRun(
                run.run_id, results, nodes is not None, len(nodes or []), len(pods or [])
            )
            runs.finish(run.run_id, "succeeded", outcome.statistics)
    except Exception as exc:
        with conn.transaction():
            runs.record(RECONCILER, invoked_by, "failed", f"{type(exc).__name__}: {exc}")
        raise
    return outcome
