"""Strategic merge patch (`application/strategic-merge-patch+json`), what kubectl apply,
edit and the official client send for an object patch: a JSON merge patch, except that the
lists Kubernetes declares with a merge key are merged element by element (containers by
name, conditions by type, ...), `metadata.finalizers` is merged as a set, and the patch may
carry the directives `$patch` (replace/delete), `$retainKeys`, `$setElementOrder/<list>`
and `$deleteFromPrimitiveList/<list>`.

The merge keys are those of the kinds the stand-in serves (k8s.io/api's `patchMergeKey`
tags); a list without one is replaced, as there."""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]

MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "conditions": "type",
    "addresses": "type",
    "hostAliases": "ip",
    "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "schedulingGates": "name",
}
MERGED_AS_SETS = frozenset({"finalizers"})
_DELETED = object()


def _merge_key(field: str, items: list[Any]) -> str | None:
    if field == "ports":  # a container's by containerPort, a Service's by port
        return "containerPort" if any("containerPort" in i for i in items) else "port"
    return MERGE_KEYS.get(field)


def _merge_list(field: str, current: Any, patch: list[Any], order: list[Any] | None) -> Any:
    current = current if isinstance(current, list) else []
    if field in MERGED_AS_SETS:
        return current + [v for v in patch if v not in current]
    items = [i for i in current + patch if isinstance(i, dict)]
    key = _merge_key(field, items)
    if key is None or not all(isinstance(i, dict) for i in patch):
        return copy.deepcopy(patch)
    if any(i.get("$patch") == "replace" for i in patch):
        return [copy.deepcopy(i) for i in patch if i.get("$patch") != "replace"]
    merged = [copy.deepcopy(i) for i in current]
    for item in patch:
        at = next(
            (
                n
                for n, old in enumerate(merged)
                if isinstance(old, dict) and old.get(key) == item.get(key)
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if at is not None:
                merged.pop(at)
        elif at is None:
            merged.append(strategic_merge({}, item))
        else:
            merged[at] = strategic_merge(merged[at], item)
    if order:
        rank = {entry.get(key): n for n, entry in enumerate(order) if isinstance(entry, dict)}
        merged.sort(key=lambda i: rank.get(i.get(key) if isinstance(i, dict) else None, len(rank)))
    return merged


def strategic_merge(target: Any, patch: Any) -> Any:
    """`target` with `patch` applied (neither is changed)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return _DELETED
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
        elif value is None:
            result.pop(key, None)
        elif isinstance(value, list):
            order = patch.get(f"$setElementOrder/{key}")
            result[key] = _merge_list(key, result.get(key), value, order)
        else:
            merged = strategic_merge(result.get(key), value)
            if merged is _DELETED:
                result.pop(key, None)
            else:
                result[key] = merged
    retained = patch.get("$retainKeys")
    if isinstance(retained, list):
        result = {k: v for k, v in result.items() if k in retained}
    return result
