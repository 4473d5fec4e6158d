"""The reservation's objects in the cluster, through the official Kubernetes client: create
(idempotent: an object that exists already is left as it is), read back, replace the
control objects, and delete everything labelled with the reservation."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from gpudev.cluster.vocabulary import KINDS, RESERVATION_LABEL

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

# Resource (as in KINDS), manifest kind, the client API object that serves them (core/v1
# or networking.k8s.io/v1) and its method name suffix.
_SERVED = [
    ("pods", "Pod", "core", "pod"),
    ("services", "Service", "core", "service"),
    ("configmaps", "ConfigMap", "core", "config_map"),
    ("secrets", "Secret", "core", "secret"),
    ("networkpolicies", "NetworkPolicy", "networking", "network_policy"),
    ("persistentvolumeclaims", "PersistentVolumeClaim", "core", "persistent_volume_claim"),
]
# Read only (a Pending pod's Warning events), never created or deleted by us.
# pods/log: the log tail of a pod that failed to start.
_READ_ONLY = [("events", "Event", "core", "event"), ("pods/log", "PodLog", "core", "pod_log")]
# Resource or manifest kind -> (API object, method name suffix).
_METHODS = {
    key: (api, suffix)
    for resource, kind, api, suffix in [*_SERVED, *_READ_ONLY]
    for key in (resource, kind)
}


class KubernetesUnavailable(Exception):
    """A transient Kubernetes API failure; the state machine retries the task."""


class ObjectNameTaken(Exception):
    """An object of our name belongs to another reservation: never adopt or delete it."""


def _status(exc: Exception) -> int:
    return int(getattr(exc, "status", 0) or 0)


class ReservationObjects:
    """A reservation's objects in one namespace, whatever their API group: every create,
    list, replace and delete goes through `_call`, which picks core/v1 or networking/v1."""

    def __init__(self, api_client: ApiClient, namespace: str):
        from kubernetes.client import CoreV1Api, NetworkingV1Api

        self._apis = {"core": CoreV1Api(api_client), "networking": NetworkingV1Api(api_client)}
        self._namespace = namespace

    @property
    def namespace(self) -> str:
        return self._namespace

    def _call(self, verb: str, kind: str, *args: Any, **kwargs: Any) -> Any:
        """`verb`_namespaced_<kind> on the API serving `kind` (a resource or manifest kind)."""
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        api, suffix = _METHODS[kind]
        operation = f"{verb}_namespaced_{suffix}"
        try:
            return getattr(self._apis[api], operation)(*args, **kwargs)
        except ApiException as exc:
            if _status(exc) >= 500 or _status(exc) == 429:
                raise KubernetesUnavailable(f"{operation}: HTTP {_status(exc)}") from exc
            raise
        except HTTPError as exc:  # timed out, refused, reset: the API server did not answer
            raise KubernetesUnavailable(f"{operation}: {type(exc).__name__}") from exc

    def create(self, manifest: dict[str, Any]) -> None:
        """Create one object. One of that name that exists already is success only when it
        is ours (a retried task); another reservation's object is never taken over."""
        from kubernetes.client.exceptions import ApiException

        kind = manifest["kind"]
        try:
            self._call("create", kind, self._namespace, manifest)
        except ApiException as exc:
            if _status(exc) != 409:
                raise
            name = manifest["metadata"]["name"]
            existing = self._call("read", kind, name, self._namespace, _preload_content=False)
            ours = manifest["metadata"]["labels"][RESERVATION_LABEL]
            holder = (json.loads(existing.data)["metadata"].get("labels") or {}).get(
                RESERVATION_LABEL
            )
            if holder != ours:
                raise ObjectNameTaken(
                    f"{kind} {name} already exists for reservation {holder}"
                ) from exc

    def read(self, kind: str, name: str) -> dict[str, Any] | None:
        """One object by name; None when it does not exist."""
        from kubernetes.client.exceptions import ApiException

        try:
            response = self._call("read", kind, name, self._namespace, _preload_content=False)
        except ApiException as exc:
            if _status(exc) == 404:
                return None
            raise
        found: dict[str, Any] = json.loads(response.data)
        return found

    def replace(self, manifest: dict[str, Any]) -> None:
        self._call(
            "replace", manifest["kind"], manifest["metadata"]["name"], self._namespace, manifest
        )

    def _list(self, kind: str, reservation_id: str) -> list[dict[str, Any]]:
        return self._select(kind, f"{RESERVATION_LABEL}={reservation_id}")

    def _select(self, kind: str, label_selector: str) -> list[dict[str, Any]]:
        response = self._call(
            "list",
            kind,
            self._namespace,
            label_selector=label_selector,
            _preload_content=False,
        )
        items: list[dict[str, Any]] = json.loads(response.data).get("items", [])
        return items

    def labelled(self, kind: str) -> list[dict[str, Any]]:
        """Every object of `kind` labelled with any reservation: one list call (the sweeper)."""
        return self._select(kind, RESERVATION_LABEL)

    def pods(self, reservation_id: str) -> list[dict[str, Any]]:
        return self._list("pods", reservation_id)

    def warning_events(self, pod_names: list[str]) -> list[dict[str, Any]]:
        """The Warning events about the named pods (one list each, by the field selectors
        every API server serves for events): why a Pending pod is not starting."""
        found: list[dict[str, Any]] = []
        for name in pod_names:
            response = self._call(
                "list",
                "events",
                self._namespace,
                field_selector=f"involvedObject.name={name}",
                _preload_content=False,
            )
            found += [
                e for e in json.loads(response.data).get("items", []) if e.get("type") == "Warning"
            ]
        return found

    def log_tail(self, pod: str, container: str, lines: int, limit_bytes: int) -> str:
        """The last `lines` lines a pod's container printed (its current run, or the last
        one when it waits to restart), at most `limit_bytes` (GET pods/{name}/log)."""
        response = self._call(
            "read",
            "pods/log",
            pod,
            self._namespace,
            container=container,
            tail_lines=lines,
            limit_bytes=limit_bytes,
            _preload_content=False,
        )
        return bytes(response.data).decode(errors="replace")

    def node_ports(self, reservation_id: str) -> dict[str, int | None]:
        """The NodePort Kubernetes gave each of the reservation's services, by name (one
        LIST however many nodes it has)."""
        return {
            s["metadata"]["name"]: s["spec"]["ports"][0].get("nodePort")
            for s in self._list("services", reservation_id)
            if s["spec"].get("ports")
        }

    def delete(self, kind: str, name: str) -> None:
        """Delete one object; one that is gone already is what we wanted."""
        from kubernetes.client.exceptions import ApiException

        try:
            self._call("delete", kind, name, self._namespace)
        except ApiException as exc:
            if _status(exc) != 404:
                raise

    def delete_listed(
        self, kind: str, name: str, uid: str | None, resource_version: str | None
    ) -> bool:
        """Delete one object only as it was listed (uid and resourceVersion preconditions);
        whether this delete removed a live object. False when it is gone already (404) or
        changed since it was listed (409: e.g. a tear down made the pod Terminating)."""
        from kubernetes.client import V1DeleteOptions, V1Preconditions
        from kubernetes.client.exceptions import ApiException

        unchanged = V1Preconditions(uid=uid, resource_version=resource_version)
        try:
            self._call(
                "delete",
                kind,
                name,
                self._namespace,
                body=V1DeleteOptions(preconditions=unchanged),
            )
        except ApiException as exc:
            if _status(exc) in (404, 409):
                return False
            raise
        return True

    def force_delete_pod(self, name: str, uid: str | None) -> None:
        """Delete a pod with no grace period (the kubelet is not asked: its node is gone or
        hung), only the one listed (uid precondition); one gone already is what we wanted."""
        from kubernetes.client import V1DeleteOptions, V1Preconditions
        from kubernetes.client.exceptions import ApiException

        try:
            self._call(
                "delete",
                "pods",
                name,
                self._namespace,
                body=V1DeleteOptions(
                    grace_period_seconds=0, preconditions=V1Preconditions(uid=uid)
                ),
            )
        except ApiException as exc:
            if _status(exc) not in (404, 409):
                raise

    def delete_all(
        self, reservation_id: str, kinds: tuple[str, ...] = KINDS, name: str | None = None
    ) -> int:
        """Delete every object of `kinds` labelled with the reservation (only the one called
        `name`, if given); how many there were. Found by label, so another reservation's
        object is never deleted, whatever its name."""
        deleted = 0
        for kind in kinds:
            for item in self._list(kind, reservation_id):
                if name is None or item["metadata"]["name"] == name:
                    self.delete(kind, item["metadata"]["name"])
                    deleted += 1
        return deleted
