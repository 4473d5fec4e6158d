"""The object store behind the Kubernetes stand-in: core/v1 objects under one lock with
server-set metadata (uid, creationTimestamp, a resourceVersion from one counter), optimistic
concurrency on writes, status as a subresource, bindings, finalizers, deletion, and the API
server's error semantics (raised as ApiError with a Status body). What it delegates: the
served kinds and admission (`resources.py`), Pod Security (`pod_security.py`), defaults and
Service addresses (`object_defaults.py`), patches (`patches.py`), deletion preconditions and
graceful pod deletion (`pod_deletion.py`), selectors (`selectors.py`).

Stored objects are frozen (`frozen.py`) and never change once stored: every write thaws
a private copy, changes it and stores it frozen again. `get`/`list` hand callers copies;
with `frozen=True` they hand out the stored objects themselves, read-only and copy-free,
for the readers inside the stand-in (the simulated cluster, the API server's GET/LIST)."""

from __future__ import annotations

import contextlib
import itertools
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from localcloud.kubernetes import apps, finalizers, patches, pod_deletion, pod_security, rbac
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.frozen import thaw
from localcloud.kubernetes.object_defaults import ObjectDefaults, default_pod_spec, label_namespace
from localcloud.kubernetes.objects_by_kind import ObjectsByKind
from localcloud.kubernetes.pod_deletion import DELETION_FIELDS, DeleteOptions
from localcloud.kubernetes.resources import KINDS, admit, api_version
from localcloud.kubernetes.selectors import field_matcher, label_matcher
from localcloud.kubernetes.timestamps import now

Obj = dict[str, Any]


class ObjectStore:
    def __init__(self) -> None:
        self._objects = ObjectsByKind()  # by (resource, namespace, name), indexed by kind
        self._lock = threading.RLock()
        self._versions = itertools.count(1000)
        self._defaults = ObjectDefaults()
        self._version_seen = 0
        self._node_index: dict[str, list[tuple[tuple[str, str, str], Obj]]] = {}
        self._node_index_version = -1
        for name in ("default", "kube-system"):
            self.create("namespaces", "", {"metadata": {"name": name}})
        for namespace in pod_security.namespaces():  # gpu-dev and gpu-dev-profiling
            self.create("namespaces", "", namespace)
        # kube-apiserver's RBAC bootstrap policy: discovery for every authenticated user.
        for role in rbac.BOOTSTRAP_CLUSTER_ROLES:
            self.create("clusterroles", "", role)
        for binding in rbac.BOOTSTRAP_CLUSTER_ROLE_BINDINGS:
            self.create("clusterrolebindings", "", binding)

    # -- helpers -----------------------------------------------------------------------
    def _key(self, resource: str, namespace: str, name: str) -> tuple[str, str, str]:
        if resource not in KINDS:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return resource, namespace if KINDS[resource][1] else "", name

    def _missing(self, resource: str, name: str) -> ApiError:
        return ApiError(404, "NotFound", f'{resource} "{name}" not found', name, resource)

    def _stamp(self, obj: Obj) -> Obj:
        """`obj` (the writer's own, plain) with the next resourceVersion."""
        self._version_seen = next(self._versions)
        obj["metadata"]["resourceVersion"] = str(self._version_seen)
        return obj

    def _store(self, key: tuple[str, str, str], obj: Obj) -> Obj:
        """Stamp `obj` and store it (frozen, a copy); `obj` stays the caller's."""
        self._objects[key] = self._stamp(obj)
        return obj

    def _require_namespace(self, resource: str, namespace: str) -> None:
        if KINDS[resource][1] and ("namespaces", "", namespace) not in self._objects:
            raise ApiError(
                404, "NotFound", f'namespaces "{namespace}" not found', namespace, "namespaces"
            )

    @contextlib.contextmanager
    def rolled_back(self) -> Iterator[None]:
        """Whatever is written inside is undone on leaving (dryRun=All), under the lock
        throughout: no reader ever sees it."""
        with self._lock:
            saved = self._objects.snapshot()
            try:
                yield
            finally:
                self._objects.restore(saved)
                self._node_index_version = -1

    # -- operations ----------------------------------------------------------------------
    def create(self, resource: str, namespace: str, obj: Obj) -> Obj:
        with self._lock:
            key = self._key(resource, namespace, obj.get("metadata", {}).get("name", ""))
            obj = thaw(obj)
            metadata = obj.setdefault("metadata", {})
            if not metadata.get("name") and metadata.get("generateName"):
                metadata["name"] = metadata["generateName"] + uuid.uuid4().hex[:5]
                key = self._key(resource, namespace, metadata["name"])
            admit(resource, obj)
            self._require_namespace(resource, namespace)
            if resource == "pods":  # Pod Security admission, after validation as in the API server
                refused = pod_security.admit_pod(self._objects[("namespaces", "", namespace)], obj)
                if refused is not None:
                    raise refused
            if key in self._objects:
                raise ApiError(
                    409,
                    "AlreadyExists",
                    f'{resource} "{metadata["name"]}" already exists',
                    metadata["name"],
                    resource,
                )
            kind, namespaced = KINDS[resource]
            obj["kind"], obj["apiVersion"] = kind, api_version(resource)
            metadata.update(uid=str(uuid.uuid4()), creationTimestamp=now())
            if namespaced:
                metadata["namespace"] = namespace
            self._defaults.apply(resource, obj, self._objects.values_of_kind("services"))
            return self._store(key, obj)

    def get(self, resource: str, namespace: str, name: str, *, frozen: bool = False) -> Obj:
        """A copy of the object; `frozen=True`: the stored object itself (read-only)."""
        with self._lock:
            obj = self._objects.get(self._key(resource, namespace, name))
            if obj is None:
                raise self._missing(resource, name)
            return obj if frozen else thaw(obj)

    def _pods_on_node(self, node_name: str) -> list[tuple[tuple[str, str, str], Obj]]:
        """Pods by spec.nodeName from an index, as kube-apiserver serves that selector."""
        if self._node_index_version != self._version_seen:
            index: dict[str, list[tuple[tuple[str, str, str], Obj]]] = {}
            for key, obj in self._objects.of_kind("pods"):
                index.setdefault(obj["spec"].get("nodeName") or "", []).append((key, obj))
            self._node_index, self._node_index_version = index, self._version_seen
        return self._node_index.get(node_name, [])

    def list(
        self,
        resource: str,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        *,
        frozen: bool = False,
    ) -> Obj:
        """The selected objects, as copies; `frozen=True`: the stored objects themselves,
        read-only and copy-free (a reader that changes one fails with TypeError)."""
        labels = label_matcher(label_selector)
        fields = field_matcher(resource, field_selector)
        with self._lock:
            self._key(resource, "", "")
            selector = field_selector or ""
            if resource == "pods" and selector.startswith("spec.nodeName=") and "," not in selector:
                candidates = self._pods_on_node(selector.removeprefix("spec.nodeName="))
            else:
                candidates = self._objects.of_kind(resource)
            items = [
                obj if frozen else thaw(obj)
                for (_, ns, _), obj in candidates
                if (namespace is None or ns == namespace) and labels(obj) and fields(obj)
            ]
            return {
                "kind": f"{KINDS[resource][0]}List",
                "apiVersion": api_version(resource),
                "metadata": {"resourceVersion": str(next(self._versions))},
                "items": items,
            }

    def _write(
        self, resource: str, namespace: str, name: str, new: Obj, subresource: str | None
    ) -> Obj:
        key = self._key(resource, namespace, name)
        current = self._objects.get(key)
        if current is None:
            raise self._missing(resource, name)
        expected = new.get("metadata", {}).get("resourceVersion")
        if expected and expected != current["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {resource} "{name}"'
                ": the object has been modified; please apply your changes to the "
                "latest version and try again",
                name,
                resource,
            )
        if subresource == "status":
            updated = thaw(current)
            updated["status"] = thaw(new.get("status", {}))
        else:
            admit(resource, new, current)
            pod_deletion.refuse_spec_change_while_terminating(current, new)
            finalizers.refuse_new_while_deleting(current, new)
            updated = thaw(new)
            if resource == "pods":  # defaulted as decoded, as on create
                default_pod_spec(updated)
            elif resource in apps.RESOURCES:  # and the generation counts spec changes
                default_pod_spec(updated.setdefault("spec", {}).setdefault("template", {}))
                apps.default(updated, current)
            updated["status"] = thaw(current.get("status", {}))
            for field in ("uid", "creationTimestamp", "namespace", "name", *DELETION_FIELDS):
                if field in current["metadata"]:
                    updated.setdefault("metadata", {})[field] = current["metadata"][field]
                else:  # server-set: a client cannot start a deletion by writing them
                    updated.get("metadata", {}).pop(field, None)
            updated["kind"], updated["apiVersion"] = current["kind"], current["apiVersion"]
            if resource == "namespaces":
                label_namespace(updated)
        if finalizers.released(finalizers.holds(current), updated):
            del self._objects[key]
            return self._stamp(updated)
        return self._store(key, updated)

    def replace(
        self, resource: str, namespace: str, name: str, obj: Obj, subresource: str | None = None
    ) -> Obj:
        with self._lock:
            return self._write(resource, namespace, name, obj, subresource)

    def patch(
        self,
        resource: str,
        namespace: str,
        name: str,
        patch: Any,
        subresource: str | None = None,
        patch_type: str | None = None,
    ) -> Obj:
        with self._lock:
            current = self.get(resource, namespace, name)
            patched = patches.apply(current, patch, patch_type)
            patched.setdefault("metadata", {}).pop("resourceVersion", None)
            return self._write(resource, namespace, name, patched, subresource)

    def update(
        self, resource: str, namespace: str, name: str, change: Callable[[Obj], None]
    ) -> Obj:
        """Change an object under the lock (the simulated cluster's controllers): `change`
        gets a private copy to change in place, which is stored if it returns (nothing is
        if it raises) and returned. A part `change` takes from a copy-free read stays
        frozen in what is returned (callbacks build new values; none does so today)."""
        with self._lock:
            key = self._key(resource, namespace, name)
            stored = self._objects.get(key)
            if stored is None:
                raise self._missing(resource, name)
            obj = thaw(stored)
            change(obj)
            if finalizers.released(finalizers.holds(stored), obj):
                del self._objects[key]
                return self._stamp(obj)
            return self._store(key, obj)

    def bind(self, namespace: str, name: str, node_name: str) -> None:
        with self._lock:
            key = self._key("pods", namespace, name)
            stored = self._objects.get(key)
            if stored is None:
                raise self._missing("pods", name)
            if stored["spec"].get("nodeName"):
                raise ApiError(
                    409,
                    "Conflict",
                    f'pod {name} is already assigned to node "{stored["spec"]["nodeName"]}"',
                    name,
                    "pods",
                )
            pod = thaw(stored)
            pod["spec"]["nodeName"] = node_name
            pod["status"]["conditions"] = [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now()}
            ]
            self._store(key, pod)

    def delete(
        self, resource: str, namespace: str, name: str, options: DeleteOptions | None = None
    ) -> Obj:
        """Remove the object, or for a pod a kubelet runs start a graceful deletion: the pod
        stays (Terminating, holding its node's resources) until the kubelet deletes it
        with grace 0, as kube-apiserver's pod strategy does."""
        options = options or DeleteOptions()
        with self._lock:
            key = self._key(resource, namespace, name)
            stored = self._objects.get(key)
            if stored is None:
                raise self._missing(resource, name)
            pod_deletion.check_preconditions(stored, resource, options)
            obj: Obj = thaw(stored)
            if resource == "pods":
                if not pod_deletion.mark_pod_deleted(obj, options):
                    return obj
                if obj["metadata"]["deletionGracePeriodSeconds"] > 0:
                    return self._store(key, obj)
            if finalizers.holds(obj):  # Terminating until its controllers let go
                finalizers.mark_deleted(obj, now())
                return self._store(key, obj)
            del self._objects[key]
            if resource == "namespaces":
                for child in [k for k in self._objects if k[1] == name]:
                    del self._objects[child]
            obj["metadata"].setdefault("deletionTimestamp", now())
            return self._stamp(obj)

    def delete_collection(
        self,
        resource: str,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
        options: DeleteOptions | None = None,
    ) -> Obj:
        """Delete each selected object with the same options; the list of what was deleted
        (pods that are now Terminating included)."""
        with self._lock:
            listed = self.list(resource, namespace, label_selector, field_selector, frozen=True)
            listed["items"] = [
                self.delete(
                    resource,
                    item["metadata"].get("namespace", ""),
                    item["metadata"]["name"],
                    options,
                )
                for item in listed["items"]
            ]
            return listed
