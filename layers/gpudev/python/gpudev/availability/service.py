"""The availability updater: Auto Scaling + Kubernetes → `gpu_types`, in a constant number of
calls (Auto Scaling pages, one node list, one pod list) and one UPDATE for every type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg

from gpudev.availability.compute import (
    Availability,
    GpuTypeConfig,
    ScalingGroup,
    compute_availability,
)
from gpudev.cluster.vocabulary import Node, Pod
from gpudev.db.queries import query
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
    runs = ReconcilerRunsRepository(conn)
    run = runs.start(RECONCILER, invoked_by)
    conn.commit()
    try:
        types = [
            GpuTypeConfig(t.gpu_type, t.max_per_node)
            for t in GpuTypesRepository(conn).list_active()
        ]
        groups = list_scaling_groups(autoscaling)
        nodes, pods = _cluster_inventory(api_client)
        results = compute_availability(types, groups, nodes, pods)
        without_groups = [r.gpu_type for r in results if not r.groups_found]
        if without_groups:
            logger.warning("No ASGs found matching pattern", extra={"gpu_types": without_groups})
        conn.execute(
            query("gpu_types/update_availability"),
            {
                "gpu_types": [r.gpu_type for r in results],
                "totals": [r.total_cluster_gpus for r in results],
                "available": [r.available_gpus for r in results],
                "max_reservable": [r.max_reservable for r in results],
                "full_nodes": [r.full_nodes_available for r in results],
                "running": [r.running_instances for r in results],
                "desired": [r.desired_capacity for r in results],
                "max_per_node": [r.max_per_node for r in results],
                "updated_by": invoked_by,
            },
        )
        outcome = AvailabilityRun(
            run.run_id, results, nodes is not None, len(nodes or []), len(pods or [])
        )
        runs.finish(run.run_id, "succeeded", outcome.statistics)
        conn.commit()
        return outcome
    except Exception as exc:
        conn.rollback()
        runs.finish(run.run_id, "failed", {}, error=f"{type(exc).__name__}: {exc}")
        conn.commit()
        raise
