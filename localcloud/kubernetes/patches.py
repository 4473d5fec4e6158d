"""The patch formats clients send: JSON merge patch (RFC 7386), strategic merge patch
(`strategic_merge.py`) and JSON patch (RFC 6902)."""

from __future__ import annotations

import copy
from typing import Any

from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.strategic_merge import strategic_merge

Obj = dict[str, Any]


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 (also used for strategic-merge patches: lists are replaced)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Obj, operations: list[Obj]) -> Obj:
    """RFC 6902 add / replace / remove on object paths (what the client sends for lists)."""
    result = copy.deepcopy(target)
    for operation in operations:
        *parents, last = [
            p.replace("~1", "/").replace("~0", "~")
            for p in operation["path"].lstrip("/").split("/")
        ]
        node: Any = result
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        op = operation["op"]
        if isinstance(node, list):
            index = len(node) if last == "-" else int(last)
            if op == "add":
                node.insert(index, operation["value"])
            elif op == "replace":
                node[index] = operation["value"]
            elif op == "remove":
                node.pop(index)
        elif op in ("add", "replace"):
            node[last] = operation["value"]
        elif op == "remove":
            node.pop(last, None)
        else:
            raise ApiError(422, "Invalid", f"unsupported JSON patch operation {op!r}")
    return result


def apply(current: Obj, patch: Any, patch_type: str | None = None) -> Obj:
    """`current` patched as `patch_type` says (json, merge or strategic, the request's
    Content-Type); without one (the stand-in's own callers), a list is a JSON patch and
    anything else a merge patch."""
    if patch_type == "strategic":
        patched: Obj = strategic_merge(current, patch)
    elif patch_type == "json" or (patch_type is None and isinstance(patch, list)):
        patched = json_patch(current, patch)
    else:
        patched = merge_patch(current, patch)
    return patched
