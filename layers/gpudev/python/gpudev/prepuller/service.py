"""The pre-puller's step in the availability updater: read the list (one query), read the
DaemonSet (one GET), and patch it only when its images differ (one PATCH). Bounded and
quiet: a failure is logged and left to the next run, never the availability's; the updater
runs every minute, so a new most-used image reaches the nodes within a minute or two.

Its Kubernetes group may get and patch this one DaemonSet and nothing else
(deploy/kubernetes/prepuller/rbac.yaml: a Role with resourceNames)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg

from gpudev.observability import logger
from gpudev.prepuller.plan import plan_patch, prepull_list
from gpudev.repositories.prepuller import PrepullerRepository
from gpudev.settings import PrepullerSettings

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class PrepullerRun:
    images: list[str]
    patched: bool
    skipped: str | None = None  # why nothing was read or written (no tools image, a failure)

    @property
    def statistics(self) -> dict[str, Any]:
        return {
            "prepull_images": len(self.images),
            "prepuller_patched": self.patched,
            **({"prepuller_skipped": self.skipped} if self.skipped else {}),
        }


def refresh_prepuller(
    conn: psycopg.Connection[Any],
    api_client: Callable[[], ApiClient],
    settings: PrepullerSettings,
    default_image: str,
) -> PrepullerRun:
    """Make the DaemonSet pull the default image and the most used ones (plan.py)."""
    if not settings.tools_image:
        return PrepullerRun([], False, "no tools image")
    try:
        with conn.transaction():
            used = PrepullerRepository(conn).most_used_images(settings.days, settings.images)
        images = prepull_list(default_image, used, settings.images)
        from kubernetes.client import AppsV1Api

        apps = AppsV1Api(api_client())
        response: Any = apps.read_namespaced_daemon_set(
            settings.name, settings.namespace, _preload_content=False
        )
        patch = plan_patch(json.loads(response.data), images, settings.tools_image)
        if patch is not None:
            apps.patch_namespaced_daemon_set(
                settings.name, settings.namespace, patch, _content_type=MERGE_PATCH
            )
            logger.info("pre-puller images changed", extra={"images": images})
        return PrepullerRun(images, patch is not None)
    except Exception as error:
        if getattr(error, "status", None) == 404:  # the operator did not apply prepuller/
            logger.warning("no pre-puller DaemonSet", extra={"daemon_set": settings.name})
            return PrepullerRun([], False, "not applied")
        logger.exception("the pre-puller's images were not refreshed")
        return PrepullerRun([], False, type(error).__name__)
