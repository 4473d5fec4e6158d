"""core/v1 Events as the kubelet, the scheduler and the controllers record them through
client-go's recorder: one Event per object, type, reason and message, whose `count` and
`lastTimestamp` grow when it happens again (the recorder's aggregation), in the object's
namespace (`default` for cluster-scoped objects), with `source` and `reportingComponent` /
`reportingInstance` saying who saw it (the kubelet: its node).

Events do not stay: kube-apiserver stores each with a TTL (`--event-ttl`, 1 h by default)
counted from its last write; `expire` deletes those whose last write is older."""

from __future__ import annotations

import contextlib
import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.store import ObjectStore
from localcloud.kubernetes.timestamps import format_time, now

Obj = dict[str, Any]
EVENT_TTL_SECONDS = 3600.0  # kube-apiserver's --event-ttl default


def record(
    store: ObjectStore,
    involved: Obj,
    kind: str,
    reason: str,
    message: str,
    component: str,
    *,
    host: str = "",
    field_path: str = "",
) -> None:
    """Record (or count again) a Normal or Warning event about `involved` (a container of
    a pod: `field_path`, e.g. `spec.containers{dev}`), seen by `component` on `host`."""
    meta = involved["metadata"]
    namespace = meta.get("namespace") or "default"
    key = f"{meta['uid']}/{field_path}/{kind}/{reason}/{message}/{component}"
    name = f"{meta['name']}.{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    moment = now()

    def again(event: Obj) -> None:
        event["count"] = event.get("count", 1) + 1
        event["lastTimestamp"] = moment

    try:
        store.update("events", namespace, name, again)
        return
    except ApiError as error:
        if error.code != 404:
            raise
    involved_object = {
        "kind": involved["kind"],
        "namespace": meta.get("namespace", ""),
        "name": meta["name"],
        "uid": meta["uid"],
        "apiVersion": involved["apiVersion"],
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    if field_path:
        involved_object["fieldPath"] = field_path
    source = {"component": component, **({"host": host} if host else {})}
    store.create(
        "events",
        namespace,
        {
            "metadata": {"name": name},
            "involvedObject": involved_object,
            "type": kind,
            "reason": reason,
            "message": message,
            "source": source,
            "reportingComponent": component,
            "reportingInstance": host,
            "firstTimestamp": moment,
            "lastTimestamp": moment,
            "eventTime": None,
            "count": 1,
        },
    )


def expire(
    store: ObjectStore, ttl_seconds: float = EVENT_TTL_SECONDS, moment: datetime | None = None
) -> int:
    """Delete the events last written more than `ttl_seconds` before `moment` (now); how
    many went."""
    cutoff = format_time((moment or datetime.now(UTC)) - timedelta(seconds=ttl_seconds))
    expired = [
        (e["metadata"]["namespace"], e["metadata"]["name"])
        for e in store.list("events", None, frozen=True)["items"]
        # an event a client created may have no lastTimestamp: its creation is its write
        if (e.get("lastTimestamp") or e["metadata"]["creationTimestamp"]) < cutoff
    ]
    for namespace, name in expired:
        with contextlib.suppress(ApiError):  # deleted meanwhile
            store.delete("events", namespace, name)
    return len(expired)
