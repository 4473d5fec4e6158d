"""The object store behind the Kubernetes stand-in: core/v1 objects with server-set
metadata, defaults, status as a subresource, bindings, service IP/port allocation, and the
API server's error semantics (raised as ApiError with a Status body)."""

from __future__ import annotations

import copy
import itertools
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from localcloud.kubernetes import (
    finalizers,
    networking,
    pod_security,
    storage_validation,
    validation,
)
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.selectors import field_matcher, label_matcher

Obj = dict[str, Any]

KINDS = {
    "namespaces": ("Namespace", False),
    "nodes": ("Node", False),
    "pods": ("Pod", True),
    "services": ("Service", True),
    "configmaps": ("ConfigMap", True),
    "secrets": ("Secret", True),
    "events": ("Event", True),
    "persistentvolumes": ("PersistentVolume", False),
    "persistentvolumeclaims": ("PersistentVolumeClaim", True),
    **networking.RESOURCES,
}
NODE_PORT_RANGE = range(30000, 32768)
DEFAULT_GRACE_SECONDS = 30  # the API server's default terminationGracePeriodSeconds
TERMINAL_PHASES = ("Succeeded", "Failed")
DELETION_FIELDS = ("deletionTimestamp", "deletionGracePeriodSeconds")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def api_version(resource: str) -> str:
    """The group/version serving `resource`: core `v1` unless another group's."""
    return networking.GROUP_VERSION if resource in networking.RESOURCES else "v1"


def admit(resource: str, obj: Obj, current: Obj | None = None) -> None:
    """Refuse what kube-apiserver refuses (validation.py); may normalise `obj` in place."""
    rejection = validation.admit(resource, KINDS[resource][0], obj, current)
    if rejection is not None:
        raise rejection


@dataclass(frozen=True)
class DeleteOptions:
    """What a DELETE may ask for (meta/v1 DeleteOptions): a grace period in seconds (None:
    the object's own) and UID / resourceVersion preconditions."""

    grace_period_seconds: int | None = None
    uid: str | None = None
    resource_version: str | None = None


def now() -> str:
    return datetime.now(UTC).strftime(TIME_FORMAT)


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


class ObjectStore:
    def __init__(self) -> None:
        self._objects: dict[tuple[str, str, str], Obj] = {}
        self._lock = threading.RLock()
        self._versions = itertools.count(1000)
        self._cluster_ips = (f"10.100.{n // 250}.{n % 250 + 1}" for n in itertools.count())
        self._version_seen = 0
        self._node_index: dict[str, list[tuple[tuple[str, str, str], Obj]]] = {}
        self._node_index_version = -1
        for name in ("default", "kube-system"):
            self.create("namespaces", "", {"metadata": {"name": name}})
        for namespace in pod_security.namespaces():  # gpu-dev and gpu-dev-profiling
            self.create("namespaces", "", namespace)

    # -- helpers -----------------------------------------------------------------------
    def _key(self, resource: str, namespace: str, name: str) -> tuple[str, str, str]:
        if resource not in KINDS:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return resource, namespace if KINDS[resource][1] else "", name

    def _missing(self, resource: str, name: str) -> ApiError:
        return ApiError(404, "NotFound", f'{resource} "{name}" not found', name, resource)

    def _stamp(self, obj: Obj) -> Obj:
        self._version_seen = next(self._versions)
        obj["metadata"]["resourceVersion"] = str(self._version_seen)
        return copy.deepcopy(obj)

    def _require_namespace(self, resource: str, namespace: str) -> None:
        if KINDS[resource][1] and ("namespaces", "", namespace) not in self._objects:
            raise ApiError(
                404, "NotFound", f'namespaces "{namespace}" not found', namespace, "namespaces"
            )

    # -- defaults ------------------------------------------------------------------------
    def _default_pod(self, pod: Obj) -> None:
        spec = pod.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
        pod["status"] = {"phase": "Pending", "conditions": [], "qosClass": "Burstable"}

    def _used_node_ports(self) -> set[int]:
        return {
            port["nodePort"]
            for (resource, _, _), svc in self._objects.items()
            if resource == "services"
            for port in svc["spec"].get("ports", [])
            if port.get("nodePort")
        }

    def _default_service(self, service: Obj) -> None:
        spec = service.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        if spec.get("clusterIP") != "None":
            spec["clusterIP"] = next(self._cluster_ips)
        spec["clusterIPs"] = [spec["clusterIP"]]
        used = self._used_node_ports()
        for port in spec.setdefault("ports", []):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
            if spec["type"] not in ("NodePort", "LoadBalancer"):
                continue
            requested = port.get("nodePort")
            if requested:
                if requested not in NODE_PORT_RANGE:
                    raise ApiError(
                        422,
                        "Invalid",
                        f"spec.ports[].nodePort: Invalid value: "
                        f"{requested}: provided port is not in the valid range. "
                        "The range of valid ports is 30000-32767",
                    )
                if requested in used:
                    raise ApiError(
                        422,
                        "Invalid",
                        f"spec.ports[].nodePort: Invalid value: "
                        f"{requested}: provided port is already allocated",
                    )
            else:
                port["nodePort"] = next(p for p in NODE_PORT_RANGE if p not in used)
            used.add(port["nodePort"])
        service["status"] = {"loadBalancer": {}}

    # -- operations ----------------------------------------------------------------------
    def create(self, resource: str, namespace: str, obj: Obj) -> Obj:
        with self._lock:
            key = self._key(resource, namespace, obj.get("metadata", {}).get("name", ""))
            obj = copy.deepcopy(obj)
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
            if resource == "pods":
                self._default_pod(obj)
            elif resource == "services":
                self._default_service(obj)
            elif resource == "namespaces":
                obj["status"] = {"phase": "Active"}
                # as the API server labels every namespace (namespaceSelector matches on it)
                metadata.setdefault("labels", {})["kubernetes.io/metadata.name"] = metadata["name"]
            elif resource in networking.RESOURCES:
                networking.default(obj)
            elif resource in ("persistentvolumes", "persistentvolumeclaims"):
                storage_validation.default(resource, obj)
            self._objects[key] = obj
            return self._stamp(obj)

    def get(self, resource: str, namespace: str, name: str) -> Obj:
        with self._lock:
            obj = self._objects.get(self._key(resource, namespace, name))
            if obj is None:
                raise self._missing(resource, name)
            return copy.deepcopy(obj)

    def _pods_on_node(self, node_name: str) -> list[tuple[tuple[str, str, str], Obj]]:
        """Pods by spec.nodeName from an index, as kube-apiserver serves that selector."""
        if self._node_index_version != self._version_seen:
            index: dict[str, list[tuple[tuple[str, str, str], Obj]]] = {}
            for key, obj in sorted(self._objects.items()):
                if key[0] == "pods":
                    index.setdefault(obj["spec"].get("nodeName") or "", []).append((key, obj))
            self._node_index, self._node_index_version = index, self._version_seen
        return self._node_index.get(node_name, [])

    def list(
        self,
        resource: str,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Obj:
        labels = label_matcher(label_selector)
        fields = field_matcher(resource, field_selector)
        with self._lock:
            self._key(resource, "", "")
            selector = field_selector or ""
            if resource == "pods" and selector.startswith("spec.nodeName=") and "," not in selector:
                candidates = self._pods_on_node(selector.removeprefix("spec.nodeName="))
            else:
                candidates = sorted(self._objects.items())
            items = [
                copy.deepcopy(obj)
                for (kind, ns, _), obj in candidates
                if kind == resource
                and (namespace is None or ns == namespace)
                and labels(obj)
                and fields(obj)
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
            updated = copy.deepcopy(current)
            updated["status"] = copy.deepcopy(new.get("status", {}))
        else:
            admit(resource, new, current)
            _refuse_spec_change_while_terminating(current, new)
            finalizers.refuse_new_while_deleting(current, new)
            updated = copy.deepcopy(new)
            updated["status"] = copy.deepcopy(current.get("status", {}))
            for field in ("uid", "creationTimestamp", "namespace", "name", *DELETION_FIELDS):
                if field in current["metadata"]:
                    updated.setdefault("metadata", {})[field] = current["metadata"][field]
                else:  # server-set: a client cannot start a deletion by writing them
                    updated.get("metadata", {}).pop(field, None)
            updated["kind"], updated["apiVersion"] = current["kind"], current["apiVersion"]
        self._objects[key] = updated
        if finalizers.released(finalizers.holds(current), updated):
            del self._objects[key]
        return self._stamp(updated)

    def replace(
        self, resource: str, namespace: str, name: str, obj: Obj, subresource: str | None = None
    ) -> Obj:
        with self._lock:
            return self._write(resource, namespace, name, obj, subresource)

    def patch(
        self, resource: str, namespace: str, name: str, patch: Any, subresource: str | None = None
    ) -> Obj:
        with self._lock:
            current = self.get(resource, namespace, name)
            patched = (
                json_patch(current, patch)
                if isinstance(patch, list)
                else merge_patch(current, patch)
            )
            patched.setdefault("metadata", {}).pop("resourceVersion", None)
            return self._write(resource, namespace, name, patched, subresource)

    def update(
        self, resource: str, namespace: str, name: str, change: Callable[[Obj], None]
    ) -> Obj:
        """Change an object in place under the lock (the simulated scheduler and kubelet)."""
        with self._lock:
            obj = self._objects.get(self._key(resource, namespace, name))
            if obj is None:
                raise self._missing(resource, name)
            held = finalizers.holds(obj)
            change(obj)
            if finalizers.released(held, obj):
                del self._objects[self._key(resource, namespace, name)]
            return self._stamp(obj)

    def bind(self, namespace: str, name: str, node_name: str) -> None:
        with self._lock:
            pod = self._objects.get(self._key("pods", namespace, name))
            if pod is None:
                raise self._missing("pods", name)
            if pod["spec"].get("nodeName"):
                raise ApiError(
                    409,
                    "Conflict",
                    f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"',
                    name,
                    "pods",
                )
            pod["spec"]["nodeName"] = node_name
            pod["status"]["conditions"] = [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now()}
            ]
            self._stamp(pod)

    def delete(
        self, resource: str, namespace: str, name: str, options: DeleteOptions | None = None
    ) -> Obj:
        """Remove the object, or for a pod a kubelet runs start a graceful deletion: the pod
        stays (Terminating, holding its node's resources) until the kubelet deletes it
        with grace 0, as kube-apiserver's pod strategy does."""
        options = options or DeleteOptions()
        with self._lock:
            key = self._key(resource, namespace, name)
            obj = self._objects.get(key)
            if obj is None:
                raise self._missing(resource, name)
            meta = obj["metadata"]
            if options.uid is not None and options.uid != meta["uid"]:
                raise ApiError(
                    409,
                    "Conflict",
                    f"Precondition failed: UID in precondition: {options.uid}, "
                    f"UID in object meta: {meta['uid']}",
                    name,
                    resource,
                )
            if (
                options.resource_version is not None
                and options.resource_version != meta["resourceVersion"]
            ):
                raise ApiError(
                    409,
                    "Conflict",
                    "Precondition failed: ResourceVersion in precondition: "
                    f"{options.resource_version}, ResourceVersion in object meta: "
                    f"{meta['resourceVersion']}",
                    name,
                    resource,
                )
            if resource == "pods":
                grace = _pod_grace_seconds(obj, options.grace_period_seconds)
                if meta.get("deletionTimestamp"):  # already terminating: only shorten
                    if (
                        options.grace_period_seconds is None
                        or grace >= meta["deletionGracePeriodSeconds"]
                    ):
                        return copy.deepcopy(obj)
                    started = _parse_time(meta["deletionTimestamp"]) - timedelta(
                        seconds=meta["deletionGracePeriodSeconds"]
                    )
                else:
                    started = datetime.now(UTC)
                meta["deletionTimestamp"] = _format_time(started + timedelta(seconds=grace))
                meta["deletionGracePeriodSeconds"] = grace
                if grace > 0:
                    return self._stamp(obj)
            if finalizers.holds(obj):  # Terminating until its controllers let go
                finalizers.mark_deleted(obj, now())
                return self._stamp(obj)
            del self._objects[key]
            if resource == "namespaces":
                for child in [k for k in self._objects if k[1] == name]:
                    del self._objects[child]
            meta.setdefault("deletionTimestamp", now())
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
            listed = self.list(resource, namespace, label_selector, field_selector)
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


def _pod_grace_seconds(pod: Obj, requested: int | None) -> int:
    """The grace period a pod deletion gets: none for a pod no kubelet runs (unbound or
    finished), else the request's (negative counts as 1 s), else the pod's own."""
    if not pod["spec"].get("nodeName") or pod["status"].get("phase") in TERMINAL_PHASES:
        return 0
    if requested is not None:
        return 1 if requested < 0 else requested
    grace = pod["spec"].get("terminationGracePeriodSeconds")
    return DEFAULT_GRACE_SECONDS if grace is None else int(grace)


def _refuse_spec_change_while_terminating(current: Obj, new: Obj) -> None:
    if current["metadata"].get("deletionTimestamp") and new.get("spec") != current.get("spec"):
        raise ApiError(
            422,
            "Invalid",
            f'{current["kind"]} "{current["metadata"]["name"]}" is invalid: spec: Forbidden: '
            "the object is being deleted; only metadata and status may change",
            current["metadata"]["name"],
            current["kind"],
        )


def _parse_time(value: str) -> datetime:
    return datetime.strptime(value, TIME_FORMAT).replace(tzinfo=UTC)


def _format_time(moment: datetime) -> str:
    return moment.strftime(TIME_FORMAT)
