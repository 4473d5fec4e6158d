"""The listing of a named disk's contents (`gpu-dev disk list-content`), taken by the pod
that mounts it as it stops (docs/decisions.md, "The content listing: the pod's preStop hook").

Pod 0 of a reservation with a disk gets a `preStop` hook that writes a bounded listing of
/home/dev to its termination message file, and a finalizer that keeps the pod object, with
the terminated container's status holding that message, after the kubelet has stopped it:
without it the kubelet's final delete follows its status write within milliseconds, and no
poll could be sure to read the message. The disk's save step reads the message, records it
and removes the finalizer (`lifecycle/disk.py`).

Pure (no `kubernetes` import): the manifest fragments and the reading of a pod's status.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

# Keeps a stopped pod of a reservation with a disk until its listing is read.
LISTING_FINALIZER = "gpu-dev.pytorch.org/home-listing"
# The first line of every listing the hook writes: a termination message that does not
# begin with it is no listing (the startup script's reason after a crash, the kubelet's
# "The container could not be located when the pod was terminated" for a container that
# was not running when its pod was deleted, anything else).
LISTING_MARKER = "gpu-dev listing v1\n"
# The kubelet keeps at most 4096 bytes of a termination message; the hook writes less
# (the marker and at most this many bytes of listing).
LISTING_BYTES = 4000
# The marker, then paths under /home/dev to depth 3 (type, size in bytes, path), sorted,
# first 4000 bytes; a failure leaves no listing, never a failed stop.
LISTING_COMMAND = [
    "/bin/sh",
    "-c",
    f"cd /home/dev 2>/dev/null && {{ printf '{LISTING_MARKER.strip()}\\n'; "
    "find . -mindepth 1 -maxdepth 3 -printf '%y %s %P\\n' "
    f"2>/dev/null | LC_ALL=C sort -k3 | head -c {LISTING_BYTES}; }} > /dev/termination-log; "
    "true",
]
# A pod whose containers still read running this long after its grace period ended is on a
# node that is gone (no kubelet will stop it): its listing is given up.
LISTING_PATIENCE = timedelta(seconds=60)


def listing_hook() -> dict[str, Any]:
    """The container fields that make it write the listing as it stops."""
    return {
        "lifecycle": {"preStop": {"exec": {"command": LISTING_COMMAND}}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


def holds_listing(pod: dict[str, Any]) -> bool:
    return LISTING_FINALIZER in (pod["metadata"].get("finalizers") or [])


def stopped(pod: dict[str, Any], now: datetime | None = None) -> bool:
    """Being deleted, and no container runs any more (or its node never stopped it)."""
    deleting = pod["metadata"].get("deletionTimestamp")
    if not deleting:
        return False
    statuses = pod.get("status", {}).get("containerStatuses") or []
    if not any("running" in (s.get("state") or {}) for s in statuses):
        return True
    ended = datetime.fromisoformat(deleting.replace("Z", "+00:00"))
    return (now or datetime.now(UTC)) > ended + LISTING_PATIENCE


def listing_of(pod: dict[str, Any]) -> str | None:
    """The listing the stopped container's hook left in its termination message, without
    its marker line; None when it left none (never started, killed without its hook, or not
    running when its pod was deleted: the message is then the startup script's reason or
    the kubelet's ContainerStatusUnknown words, never a listing)."""
    for status in pod.get("status", {}).get("containerStatuses") or []:
        message = ((status.get("state") or {}).get("terminated") or {}).get("message") or ""
        if message.startswith(LISTING_MARKER):
            return message.removeprefix(LISTING_MARKER)
    return None


def without_finalizer(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as read (its resourceVersion kept, so a concurrent write conflicts), minus
    the listing's finalizer. Its kind is set: Kubernetes leaves `kind` and `apiVersion` out
    of the items of a list."""
    pod["kind"], pod["apiVersion"] = "Pod", "v1"
    meta = pod["metadata"]
    meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != LISTING_FINALIZER]
    return pod
