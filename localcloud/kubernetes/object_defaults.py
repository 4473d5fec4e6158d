"""What the API server fills in on create: a pod's defaulted spec fields (its own, and each
container's: imagePullPolicy, termination message path and policy, ports' protocol, probe
timings) and initial status, a Service's ClusterIP and NodePorts (allocated here, a
requested ClusterIP or NodePort kept, checked against the range and the addresses or ports
in use, `None` a headless Service's; ports' protocol and
targetPort), a namespace's phase and `kubernetes.io/metadata.name` label, and the networking
and storage kinds' defaults. The pod spec defaults are applied on every write
(`default_pod_spec`), as kube-apiserver defaults what it decodes."""

from __future__ import annotations

import ipaddress
import itertools
from collections.abc import Iterable
from typing import Any

from localcloud.kubernetes import apps, networking, storage_validation
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.rules import FieldError

Obj = dict[str, Any]
NODE_PORT_RANGE = range(30000, 32768)
SERVICE_CIDR = ipaddress.ip_network("10.100.0.0/16")  # EKS's default service range
DEFAULT_GRACE_SECONDS = 30  # the API server's default terminationGracePeriodSeconds
PROBE_DEFAULTS = {
    "timeoutSeconds": 1,
    "periodSeconds": 10,
    "successThreshold": 1,
    "failureThreshold": 3,
}


def label_namespace(namespace: Obj) -> None:
    """As the API server labels every namespace on create and on update (namespaceSelector
    matches on it): a replace without the label gets it back."""
    metadata = namespace["metadata"]
    metadata.setdefault("labels", {})["kubernetes.io/metadata.name"] = metadata["name"]


class ObjectDefaults:
    """Defaults for new objects."""

    def apply(self, resource: str, obj: Obj, services: Iterable[Obj]) -> None:
        """Fill in `obj` (new, validated) in place; `services`: the store's Services, whose
        ClusterIPs and NodePorts are taken."""
        if resource == "pods":
            default_pod(obj)
        elif resource == "services":
            self._default_service(obj, list(services))
        elif resource == "namespaces":
            obj["status"] = {"phase": "Active"}
            label_namespace(obj)
        elif resource in networking.RESOURCES:
            networking.default(obj)
        elif resource in apps.RESOURCES:
            default_pod_spec(obj.setdefault("spec", {}).setdefault("template", {}))
            apps.default(obj)
        elif resource in ("persistentvolumes", "persistentvolumeclaims"):
            storage_validation.default(resource, obj)

    def _default_service(self, service: Obj, services: list[Obj]) -> None:
        used = _node_ports(services)
        spec = service.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        requested = spec.get("clusterIP") or (spec.get("clusterIPs") or [""])[0]
        if requested and requested != "None":
            _check_cluster_ip(service, requested, services)
        spec["clusterIP"] = requested or _free_cluster_ip(services)
        spec["clusterIPs"] = [spec["clusterIP"]]
        for port in spec.setdefault("ports", []):
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
            if spec["type"] not in ("NodePort", "LoadBalancer"):
                continue
            requested = port.get("nodePort")
            if requested:
                _check_node_port(requested, used)
            else:
                port["nodePort"] = next(p for p in NODE_PORT_RANGE if p not in used)
            used.add(port["nodePort"])
        service["status"] = {"loadBalancer": {}}


def default_pod(pod: Obj) -> None:
    default_pod_spec(pod)
    pod["status"] = {"phase": "Pending", "conditions": [], "qosClass": "Burstable"}


def default_pod_spec(pod: Obj) -> None:
    """The spec fields kube-apiserver defaults (pkg/apis/core/v1/defaults.go), the ones a
    `kubectl get -o yaml` of our pods shows; idempotent."""
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        _default_container(container)


def pull_policy(image: str) -> str:
    """An image's default imagePullPolicy: Always if tagged `latest` or untagged."""
    tagged = ":" in image.rsplit("/", 1)[-1] or "@" in image
    return "Always" if not tagged or image.endswith(":latest") else "IfNotPresent"


def _default_container(container: Obj) -> None:
    container.setdefault("imagePullPolicy", pull_policy(container.get("image", "")))
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        port.setdefault("protocol", "TCP")
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(kind)
        if isinstance(probe, dict):
            for field, value in PROBE_DEFAULTS.items():
                probe.setdefault(field, value)


def _free_cluster_ip(services: list[Obj]) -> str:
    """The first address no Service holds: an address is taken only by a stored Service, so
    a dry run's (rolled back with its Service) and a deleted Service's are free again, as in
    kube-apiserver's allocator."""
    taken = {service["spec"].get("clusterIP") for service in services}
    addresses = (f"10.100.{n // 250}.{n % 250 + 1}" for n in itertools.count())
    return next(address for address in addresses if address not in taken)


class _GoStrings(list[str]):
    """A list shown as Go's %#v shows a []string, as kube-apiserver's messages do."""

    def __str__(self) -> str:
        return "[]string{" + ", ".join(f'"{item}"' for item in self) + "}"


def _check_cluster_ip(service: Obj, requested: str, services: list[Obj]) -> None:
    """A requested ClusterIP as kube-apiserver's allocator takes it: a valid address, inside
    the service range (its network and broadcast addresses excluded) and held by no other
    Service; otherwise 422 with the allocator's words (pkg/registry/core/service/ipallocator)."""
    try:
        address = ipaddress.ip_address(requested)
    except ValueError:
        error = FieldError(
            "Invalid value",
            "spec.clusterIPs[0]",
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            requested,
        )
    else:
        outside = address not in SERVICE_CIDR or address in (
            SERVICE_CIDR.network_address,
            SERVICE_CIDR.broadcast_address,
        )
        taken = any(other["spec"].get("clusterIP") == requested for other in services)
        if outside:
            reason = (
                f"the provided IP ({requested}) is not in the valid range. "
                f"The range of valid IPs is {SERVICE_CIDR}"
            )
        elif taken:
            reason = "provided IP is already allocated"
        else:
            return
        error = FieldError(
            "Invalid value",
            "spec.clusterIPs",
            f"failed to allocate IP {requested}: {reason}",
            _GoStrings([requested]),
        )
    name = service["metadata"]["name"]
    message = f'Service "{name}" is invalid: {error}'
    raise ApiError(422, "Invalid", message, name, "Service", [error.cause()])


def _node_ports(services: Iterable[Obj]) -> set[int]:
    return {
        port["nodePort"]
        for service in services
        for port in service["spec"].get("ports", [])
        if port.get("nodePort")
    }


def _check_node_port(requested: int, used: set[int]) -> None:
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
