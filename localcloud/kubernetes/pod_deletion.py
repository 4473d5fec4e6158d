"""Deletion as kube-apiserver does it: DeleteOptions' UID / resourceVersion preconditions,
and a pod's graceful deletion (the pod stays, Terminating, with `deletionTimestamp` and
`deletionGracePeriodSeconds`, until its kubelet deletes it with grace 0; a second deletion
may only shorten the grace period); no spec change while an object is being deleted."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.object_defaults import DEFAULT_GRACE_SECONDS
from localcloud.kubernetes.timestamps import format_time, parse_time

Obj = dict[str, Any]
TERMINAL_PHASES = ("Succeeded", "Failed")
DELETION_FIELDS = ("deletionTimestamp", "deletionGracePeriodSeconds")


@dataclass(frozen=True)
class DeleteOptions:
    """What a DELETE may ask for (meta/v1 DeleteOptions): a grace period in seconds (None:
    the object's own) and UID / resourceVersion preconditions."""

    grace_period_seconds: int | None = None
    uid: str | None = None
    resource_version: str | None = None


def check_preconditions(obj: Obj, resource: str, options: DeleteOptions) -> None:
    meta, name = obj["metadata"], obj["metadata"]["name"]
    if options.uid is not None and options.uid != meta["uid"]:
        raise ApiError(
            409,
            "Conflict",
            f"Precondition failed: UID in precondition: {options.uid}, "
            f"UID in object meta: {meta['uid']}",
            name,
            resource,
        )
    if options.resource_version is not None and options.resource_version != meta["resourceVersion"]:
        raise ApiError(
            409,
            "Conflict",
            "Precondition failed: ResourceVersion in precondition: "
            f"{options.resource_version}, ResourceVersion in object meta: "
            f"{meta['resourceVersion']}",
            name,
            resource,
        )


def mark_pod_deleted(pod: Obj, options: DeleteOptions) -> bool:
    """Set the pod's deletion fields for this request; whether anything changed (a second
    deletion that does not shorten the grace period changes nothing)."""
    meta = pod["metadata"]
    grace = _pod_grace_seconds(pod, options.grace_period_seconds)
    if meta.get("deletionTimestamp"):  # already terminating: only shorten
        if options.grace_period_seconds is None or grace >= meta["deletionGracePeriodSeconds"]:
            return False
        started = parse_time(meta["deletionTimestamp"]) - timedelta(
            seconds=meta["deletionGracePeriodSeconds"]
        )
    else:
        started = datetime.now(UTC)
    meta["deletionTimestamp"] = format_time(started + timedelta(seconds=grace))
    meta["deletionGracePeriodSeconds"] = grace
    return True


def _pod_grace_seconds(pod: Obj, requested: int | None) -> int:
    """The grace period a pod deletion gets: none for a pod no kubelet runs (unbound or
    finished), else the request's (negative counts as 1 s), else the pod's own."""
    if not pod["spec"].get("nodeName") or pod["status"].get("phase") in TERMINAL_PHASES:
        return 0
    if requested is not None:
        return 1 if requested < 0 else requested
    grace = pod["spec"].get("terminationGracePeriodSeconds")
    return DEFAULT_GRACE_SECONDS if grace is None else int(grace)


def refuse_spec_change_while_terminating(current: Obj, new: Obj) -> None:
    if current["metadata"].get("deletionTimestamp") and new.get("spec") != current.get("spec"):
        raise ApiError(
            422,
            "Invalid",
            f'{current["kind"]} "{current["metadata"]["name"]}" is invalid: spec: Forbidden: '
            "the object is being deleted; only metadata and status may change",
            current["metadata"]["name"],
            current["kind"],
        )
