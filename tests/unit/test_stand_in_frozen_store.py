"""The stand-in's stored objects never change once stored (frozen.py, store.py): a frozen
object refuses every change, `get`/`list` hand callers plain copies of their own, and
`frozen=True` hands out the stored objects themselves. These tests fail if any write path
changed a stored object in place (an object read copy-free before a write must read the
same after it), if a reader could change one, or if a copy were shared with the store."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.frozen import FrozenDict, FrozenList, freeze, thaw
from localcloud.kubernetes.pod_deletion import DeleteOptions
from localcloud.kubernetes.resources import KINDS
from localcloud.kubernetes.store import ObjectStore

Obj = dict[str, Any]
POD = {
    "metadata": {"name": "p", "labels": {"app": "a"}, "finalizers": ["example.com/keep"]},
    "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 22}]}]},
}
CHANGES: list[Callable[[Any], object]] = [
    lambda d: d.__setitem__("k", 1),
    lambda d: d.__delitem__("metadata"),
    lambda d: d.update(k=1),
    lambda d: d.setdefault("k", 1),
    lambda d: d.pop("metadata"),
    lambda d: d.popitem(),
    lambda d: d.clear(),
    lambda d: d.__ior__({"k": 1}),
    lambda d: d["metadata"]["labels"].__setitem__("app", "b"),
    lambda d: d["metadata"]["finalizers"].append("x"),
    lambda d: d["metadata"]["finalizers"].extend(["x"]),
    lambda d: d["metadata"]["finalizers"].insert(0, "x"),
    lambda d: d["metadata"]["finalizers"].__setitem__(0, "x"),
    lambda d: d["metadata"]["finalizers"].__delitem__(0),
    lambda d: d["metadata"]["finalizers"].pop(),
    lambda d: d["metadata"]["finalizers"].remove("example.com/keep"),
    lambda d: d["metadata"]["finalizers"].sort(),
    lambda d: d["metadata"]["finalizers"].reverse(),
    lambda d: d["metadata"]["finalizers"].clear(),
    lambda d: d["metadata"]["finalizers"].__iadd__(["x"]),
    lambda d: d["metadata"]["finalizers"].__imul__(2),
]


@pytest.mark.parametrize("change", CHANGES)
def test_a_frozen_object_refuses_every_change(change: Callable[[Any], object]):
    frozen = freeze(copy.deepcopy(POD))
    before = json.dumps(frozen)
    with pytest.raises(TypeError, match="read-only"):
        change(frozen)
    assert json.dumps(frozen) == before


def test_a_frozen_object_reads_compares_and_encodes_as_a_plain_one_and_thaws_to_one():
    frozen = freeze(POD)
    assert frozen == POD and json.loads(json.dumps(frozen)) == POD
    assert isinstance(frozen["spec"]["containers"], FrozenList)
    for plain in (thaw(frozen), copy.deepcopy(frozen)):
        assert plain == POD and type(plain) is dict
        assert type(plain["spec"]["containers"][0]["ports"]) is list
        plain["metadata"]["labels"]["app"] = "b"  # its own: the frozen one is unchanged
    assert frozen["metadata"]["labels"]["app"] == "a"
    assert freeze(frozen) is frozen  # nothing to copy
    with pytest.raises(TypeError, match="JSON values"):
        freeze({"metadata": {"tags": {"a", "b"}}})


def _pod_store() -> ObjectStore:
    store = ObjectStore()
    store.create("pods", "default", POD)
    return store


def _snapshot(store: ObjectStore) -> list[tuple[Obj, str]]:
    """Every stored object, read copy-free, with its JSON as read."""
    return [
        (obj, json.dumps(obj))
        for resource in KINDS
        for obj in store.list(resource, None, frozen=True)["items"]
    ]


def _unchanged(snapshot: list[tuple[Obj, str]]) -> None:
    for obj, text in snapshot:
        assert json.dumps(obj) == text, f"stored {obj['kind']} changed in place"


WRITES: dict[str, Callable[[ObjectStore], object]] = {
    "create": lambda s: s.create("pods", "default", {**POD, "metadata": {"name": "q"}}),
    "replace": lambda s: s.replace(
        "pods", "default", "p", {**s.get("pods", "default", "p"), "metadata": {"name": "p"}}
    ),
    "merge patch": lambda s: s.patch("pods", "default", "p", {"metadata": {"labels": {"a": "b"}}}),
    "json patch": lambda s: s.patch(
        "pods", "default", "p", [{"op": "add", "path": "/metadata/labels/x", "value": "y"}]
    ),
    "status": lambda s: s.patch("pods", "default", "p", {"status": {"phase": "Running"}}, "status"),
    "update": lambda s: s.update(
        "pods", "default", "p", lambda o: o["metadata"]["labels"].update(app="b")
    ),
    "bind": lambda s: s.bind("default", "p", "node-1"),
    "graceful delete": lambda s: (
        s.bind("default", "p", "node-1"),
        s.delete("pods", "default", "p"),
    ),
    "delete held by a finalizer": lambda s: s.delete("pods", "default", "p", DeleteOptions(0)),
    "finalizer released": lambda s: (
        s.delete("pods", "default", "p", DeleteOptions(0)),
        s.update("pods", "default", "p", lambda o: o["metadata"].update(finalizers=[])),
    ),
    "delete collection": lambda s: s.delete_collection("pods", None, "app=a", None),
    "namespace deleted": lambda s: s.delete("namespaces", "", "default"),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_no_write_changes_a_stored_object_in_place(write: Callable[[ObjectStore], object]):
    store = _pod_store()
    snapshot = _snapshot(store)
    write(store)
    _unchanged(snapshot)


def test_copy_free_reads_are_the_stored_objects_and_read_only():
    store = _pod_store()
    listed = store.list("pods", None, frozen=True)["items"][0]
    assert listed is store.get("pods", "default", "p", frozen=True)
    assert isinstance(listed, FrozenDict)
    with pytest.raises(TypeError, match="read-only"):
        listed["status"]["phase"] = "Running"
    store.update("pods", "default", "p", lambda o: o["status"].update(phase="Running"))
    assert listed["status"]["phase"] == "Pending"  # the object read then, unchanged
    assert store.get("pods", "default", "p", frozen=True)["status"]["phase"] == "Running"


def test_callers_get_copies_of_their_own_from_every_read_and_write():
    store = ObjectStore()
    created = store.create("pods", "default", POD)
    handed = [
        created,
        store.get("pods", "default", "p"),
        store.list("pods", None)["items"][0],
        store.patch("pods", "default", "p", {"metadata": {"labels": {"a": "b"}}}),
        store.update("pods", "default", "p", lambda o: None),
    ]
    for obj in handed:
        assert type(obj) is dict and type(obj["metadata"]["finalizers"]) is list
        obj["metadata"]["labels"]["app"] = "changed by a caller"
        obj["metadata"]["finalizers"].append("example.com/caller")
    stored = store.get("pods", "default", "p")
    assert stored["metadata"]["labels"]["app"] == "a"
    assert stored["metadata"]["finalizers"] == ["example.com/keep"]


def test_an_update_whose_change_fails_stores_nothing():
    store = _pod_store()
    before = store.get("pods", "default", "p")

    def half_done(obj: Obj) -> None:
        obj["metadata"]["labels"]["app"] = "half"
        raise ApiError(409, "Conflict", "taken meanwhile")

    with pytest.raises(ApiError):
        store.update("pods", "default", "p", half_done)
    assert store.get("pods", "default", "p") == before
