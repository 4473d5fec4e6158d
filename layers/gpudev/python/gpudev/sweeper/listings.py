"""Pods stuck Terminating by the disk listing's finalizer (cluster/home_listing.py).

Pod 0 of a reservation with a disk keeps `LISTING_FINALIZER` until `Save the disk` reads
its listing and removes it (`lifecycle/disk.py`, `_record_listing`); the sweeper's disk
step reuses that path for executions that died. A pod whose reservation has ended (or does
not exist), whose disk no reservation holds any more (so no save path will come for it)
and whose deletion began more than the listing patience before this run is let go here:
its finalizer is removed, the listing is lost (logged), and it counts as a repair
(`listings_released`). A live reservation's pod, and one whose disk is still held (its
execution or the sweeper's disk step reads the listing), are never touched."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from gpudev.cluster import home_listing
from gpudev.cluster.vocabulary import RESERVATION_LABEL
from gpudev.sweeper.plan import Limits, leftover


@dataclass(frozen=True)
class HeldPod:
    """A Terminating pod that still holds the listing's finalizer, as listed."""

    namespace: str
    reservation_id: str
    deleting_since: datetime
    item: dict[str, Any]

    @classmethod
    def of(cls, namespace: str, item: dict[str, Any]) -> HeldPod | None:
        deleting = item["metadata"].get("deletionTimestamp")
        if not deleting or not home_listing.holds_listing(item):
            return None
        return cls(
            namespace,
            (item["metadata"].get("labels") or {}).get(RESERVATION_LABEL, ""),
            datetime.fromisoformat(deleting.replace("Z", "+00:00")),
            item,
        )


def listings_to_release(
    pods: Iterable[HeldPod],
    live: set[str],
    holding: set[str],
    ended_at: Mapping[str, datetime],
    listed_at: datetime,
    limits: Limits,
) -> list[HeldPod]:
    """`live`: reservation ids read as live this run; `holding`: ids of reservations that
    still hold a disk; `ended_at`/`listed_at` as for `plan_sweep`."""
    patience = timedelta(seconds=limits.listing_patience_seconds)
    return [
        pod
        for pod in pods
        if pod.reservation_id not in live
        and pod.reservation_id not in holding
        and leftover(pod.reservation_id, ended_at, listed_at, limits)
        and pod.deleting_since + patience <= listed_at
    ]


def release(
    namespaces: Mapping[str, Any], pods: Iterable[HeldPod], statistics: dict[str, int]
) -> None:
    """Remove the finalizer of each pod, as listed (its resourceVersion kept: a pod that
    changed since, or is gone, is left to the next run and not counted)."""
    from kubernetes.client.exceptions import ApiException

    from gpudev.cluster.objects_client import KubernetesUnavailable
    from gpudev.observability import logger

    for pod in pods:
        name = pod.item["metadata"]["name"]
        try:
            namespaces[pod.namespace].replace(home_listing.without_finalizer(pod.item))
        except ApiException as exc:
            if exc.status not in (404, 409):
                statistics["errors"] += 1
                logger.error(
                    "sweeper could not release a pod", extra={"pod": name, "error": str(exc)}
                )
            continue
        except KubernetesUnavailable as exc:
            statistics["errors"] += 1
            logger.error("sweeper could not release a pod", extra={"pod": name, "error": str(exc)})
            continue
        statistics["listings_released"] += 1
        logger.warning(
            "sweeper released a pod held by the disk listing's finalizer; its listing is lost",
            extra={
                "pod": name,
                "namespace": pod.namespace,
                "reservation_id": pod.reservation_id,
                "deleting_since": pod.deleting_since.isoformat(),
            },
        )
