"""The stand-in's store keeps its objects indexed by kind (objects_by_kind.py) so a LIST
touches only the kind asked for. These tests fail if the index ever went out of step with the
objects: after creates, replaces, patches, status writes, in-place updates, finalizer
releases, graceful pod deletion, delete_collection and a namespace's deletion (its children
go with it), every kind lists exactly, and in the same order, what the store holds."""

from __future__ import annotations

import random
from typing import Any

import pytest

from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.pod_deletion import DeleteOptions
from localcloud.kubernetes.resources import KINDS
from localcloud.kubernetes.store import ObjectStore

Obj = dict[str, Any]
KEYS = ("configmaps", "secrets", "services", "pods", "persistentvolumeclaims")


def _manifest(resource: str, name: str, labels: dict[str, str] | None = None) -> Obj:
    metadata: Obj = {"name": name, "labels": labels or {}}
    spec: dict[str, Obj] = {
        "configmaps": {"data": {"k": "v"}},
        "secrets": {"stringData": {"k": "v"}},
        "services": {"spec": {"ports": [{"port": 22}], "selector": {"app": name}}},
        "pods": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
        "persistentvolumeclaims": {
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            }
        },
        "nodes": {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
    }[resource]
    return {"metadata": metadata, **spec}


def _held(store: ObjectStore) -> dict[str, list[tuple[str, str]]]:
    """Every object the store holds, by kind, as (namespace, name) in key order: read from
    the whole mapping, not from the index."""
    held: dict[str, list[tuple[str, str]]] = {resource: [] for resource in KINDS}
    for resource, namespace, name in sorted(iter(store._objects)):
        held[resource].append((namespace, name))
    return held


def _listed(store: ObjectStore, resource: str, namespace: str | None = None) -> list[Any]:
    return [
        (o["metadata"].get("namespace", ""), o["metadata"]["name"])
        for o in store.list(resource, namespace)["items"]
    ]


def _assert_in_step(store: ObjectStore) -> None:
    held = _held(store)
    for resource in KINDS:
        assert _listed(store, resource) == held[resource], resource
        assert store.list(resource, None)["items"] == [  # as written, not an older version
            store.get(resource, namespace, name) for namespace, name in held[resource]
        ], resource
        for namespace in ("gpu-dev", "team-a"):
            wanted = [(ns, n) for ns, n in held[resource] if ns == namespace]
            if KINDS[resource][1]:
                assert _listed(store, resource, namespace) == wanted, (resource, namespace)


def test_every_kind_lists_what_the_store_holds_through_every_kind_of_write():
    store = ObjectStore()
    store.create("namespaces", "", {"metadata": {"name": "team-a"}})
    store.create("nodes", "", _manifest("nodes", "node-1"))
    for namespace in ("gpu-dev", "team-a"):
        for resource in KEYS:
            for name in ("b", "a", "c"):
                store.create(resource, namespace, _manifest(resource, name, {"set": name}))
    _assert_in_step(store)

    store.replace("configmaps", "gpu-dev", "a", _manifest("configmaps", "a", {"set": "x"}))
    store.patch("secrets", "gpu-dev", "b", {"metadata": {"labels": {"set": "x"}}})
    store.replace("pods", "gpu-dev", "a", {"status": {"phase": "Running"}}, "status")
    store.update("services", "gpu-dev", "c", lambda s: s["metadata"]["labels"].update(u="1"))
    store.bind("gpu-dev", "b", "node-1")
    store.delete("pods", "gpu-dev", "b")  # bound: graceful, stays Terminating
    _assert_in_step(store)
    assert ("gpu-dev", "b") in _listed(store, "pods")

    store.delete("pods", "gpu-dev", "b", _grace_zero())  # the kubelet's final deletion
    store.delete("persistentvolumeclaims", "gpu-dev", "a")  # pvc-protection: Terminating
    _assert_in_step(store)
    assert ("gpu-dev", "a") in _listed(store, "persistentvolumeclaims")
    store.patch("persistentvolumeclaims", "gpu-dev", "a", {"metadata": {"finalizers": []}})
    store.delete("persistentvolumeclaims", "gpu-dev", "b")
    store.update(  # the last finalizer released in place, as the volume controller does
        "persistentvolumeclaims",
        "gpu-dev",
        "b",
        lambda c: c["metadata"].update(finalizers=[]),
    )
    store.delete_collection("configmaps", "gpu-dev", "set=x", None)
    store.delete("namespaces", "", "team-a")  # its children go with it
    _assert_in_step(store)

    assert _listed(store, "pods") == [("gpu-dev", "a"), ("gpu-dev", "c")]
    assert _listed(store, "configmaps") == [("gpu-dev", "b"), ("gpu-dev", "c")]
    assert _listed(store, "persistentvolumeclaims") == [("gpu-dev", "c")]
    assert [n for _, n in _listed(store, "namespaces")] == sorted(
        ["default", "kube-system", "gpu-dev", "gpu-dev-profiling", "gpu-dev-docker"]
    )
    for resource in KEYS:
        assert not store.list(resource, "team-a")["items"], resource
    with pytest.raises(ApiError):
        store.create("configmaps", "team-a", _manifest("configmaps", "a"))


def test_a_long_random_sequence_of_writes_keeps_every_list_in_step():
    rng = random.Random(11)
    store = ObjectStore()
    store.create("nodes", "", _manifest("nodes", "node-1"))
    for step in range(400):
        resource = rng.choice(KEYS)
        namespace = rng.choice(("gpu-dev", "team-a"))
        name = rng.choice("abcdef")
        action = rng.choice(("create", "create", "patch", "delete", "namespace"))
        try:
            if action == "create":
                store.create(resource, namespace, _manifest(resource, name))
            elif action == "patch":
                store.patch(resource, namespace, name, {"metadata": {"labels": {"s": str(step)}}})
            elif action == "delete":
                store.delete(resource, namespace, name, _grace_zero())
                if resource == "persistentvolumeclaims":
                    store.patch(resource, namespace, name, {"metadata": {"finalizers": []}})
            elif rng.random() < 0.2:
                store.delete("namespaces", "", "team-a")
            else:
                store.create("namespaces", "", {"metadata": {"name": "team-a"}})
        except ApiError:
            pass  # exists already, not found, namespace missing or going: nothing changed
        _assert_in_step(store)
    pods_on_node = store.list("pods", None, field_selector="spec.nodeName=")["items"]
    assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods_on_node] == (
        _held(store)["pods"]
    )


def test_a_listed_object_is_the_callers_own_copy():
    store = ObjectStore()
    store.create("configmaps", "gpu-dev", _manifest("configmaps", "a"))
    [listed] = store.list("configmaps", "gpu-dev")["items"]
    listed["data"]["k"] = "changed"
    listed["metadata"]["labels"]["mine"] = "yes"
    [again] = store.list("configmaps", None)["items"]
    assert again["data"] == {"k": "v"} and again["metadata"]["labels"] == {}


def _grace_zero() -> DeleteOptions:
    return DeleteOptions(grace_period_seconds=0)
