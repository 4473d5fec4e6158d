"""core/v1 Events as controllers record them: one Event per object, reason and message,
whose `count` and `lastTimestamp` grow when it happens again (the client-side
aggregation of client-go's recorder), in the object's namespace (`default` for
cluster-scoped objects)."""

from __future__ import annotations

import hashlib
from typing import Any

from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.store import ObjectStore
from localcloud.kubernetes.timestamps import now

Obj = dict[str, Any]


def record(
    store: ObjectStore, involved: Obj, kind: str, reason: str, message: str, component: str
) -> None:
    """Record (or count again) a Normal or Warning event about `involved`."""
    meta = involved["metadata"]
    namespace = meta.get("namespace") or "default"
    digest = hashlib.sha256(f"{meta['uid']}/{reason}/{message}".encode()).hexdigest()[:16]
    name = f"{meta['name']}.{digest}"
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
    store.create(
        "events",
        namespace,
        {
            "metadata": {"name": name},
            "involvedObject": {
                "kind": involved["kind"],
                "namespace": meta.get("namespace", ""),
                "name": meta["name"],
                "uid": meta["uid"],
                "apiVersion": involved["apiVersion"],
            },
            "type": kind,
            "reason": reason,
            "message": message,
            "source": {"component": component},
            "firstTimestamp": moment,
            "lastTimestamp": moment,
            "count": 1,
        },
    )
