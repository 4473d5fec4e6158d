"""Finalizers as kube-apiserver applies them to every kind: deleting an object that has
finalizers only marks it (`deletionTimestamp`, grace 0) and keeps it, Terminating, until
its controllers have removed them all; the write that removes the last one deletes it. No
finalizer may be added to an object being deleted."""

from __future__ import annotations

from typing import Any

from localcloud.kubernetes.errors import ApiError

Obj = dict[str, Any]


def holds(obj: Obj) -> bool:
    """The object has finalizers left: a deletion must wait for them."""
    return bool(obj["metadata"].get("finalizers"))


def mark_deleted(obj: Obj, moment: str) -> None:
    meta = obj["metadata"]
    meta.setdefault("deletionTimestamp", moment)
    meta.setdefault("deletionGracePeriodSeconds", 0)


def released(held: bool, obj: Obj) -> bool:
    """A write took the last finalizer off a Terminating object (`held`: it had some
    before): the API server deletes it. A pod in its grace period (Terminating without
    finalizers) is not released by a write; its kubelet deletes it."""
    return held and bool(obj["metadata"].get("deletionTimestamp")) and not holds(obj)


def refuse_new_while_deleting(current: Obj, new: Obj) -> None:
    if not current["metadata"].get("deletionTimestamp"):
        return
    before = set(current["metadata"].get("finalizers") or [])
    added = [f for f in new.get("metadata", {}).get("finalizers") or [] if f not in before]
    if added:
        name = current["metadata"]["name"]
        raise ApiError(
            422,
            "Invalid",
            f'{current["kind"]} "{name}" is invalid: metadata.finalizers: Forbidden: no new '
            "finalizers can be added if the object is being deleted, found new finalizers "
            f"{added!r}".replace("'", '"'),
            name,
            current["kind"],
            [
                {
                    "reason": "FieldValueForbidden",
                    "message": "Forbidden: no new finalizers can be added if the object is "
                    "being deleted",
                    "field": "metadata.finalizers",
                }
            ],
        )
