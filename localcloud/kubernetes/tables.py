"""Server-side printing: a list or object as a meta.k8s.io/v1 Table, which kubectl asks for
(`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) and prints as it comes.

Columns are kube-apiserver's (pkg/printers/internalversion/printers.go): priority 0 is
`kubectl get`'s, priority 1 is added by `-o wide`. Kinds without printers of their own get
kube-apiserver's default table: NAME and CREATED AT. Each row carries the object's metadata
(`includeObject=Metadata`, the default), which kubectl uses for the NAMESPACE column and
labels."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from localcloud.kubernetes.errors import ApiError

Obj = dict[str, Any]
TABLE_MEDIA = "as=Table"


def wants_table(accept: str) -> bool:
    """Whether the Accept header's first choice is a meta.k8s.io/v1 Table."""
    first = accept.split(",")[0].replace(" ", "")
    params = set(first.split(";")[1:])
    return "as=Table" in params and "g=meta.k8s.io" in params and "v=v1" in params


def _age(timestamp: str | None) -> str:
    """kubectl's short human duration (`duration.HumanDuration`)."""
    if not timestamp:
        return "<unknown>"
    then = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    seconds = int((datetime.datetime.now(datetime.UTC) - then).total_seconds())
    if seconds < 0:
        return "<invalid>"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if days < 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    return f"{days}d" if days < 365 * 2 else f"{days // 365}y{days % 365}d"


def _col(name: str, priority: int = 0, kind: str = "string", fmt: str = "") -> Obj:
    return {"name": name, "type": kind, "format": fmt, "description": "", "priority": priority}


NAME = _col("Name", fmt="name")
AGE = _col("Age")


def _pod(pod: Obj) -> list[Any]:
    spec, status = pod.get("spec", {}), pod.get("status", {})
    containers = status.get("containerStatuses") or []
    ready = sum(1 for c in containers if c.get("ready"))
    restarts = sum(c.get("restartCount", 0) for c in containers)
    reason = status.get("reason") or status.get("phase") or ""
    for container in containers:
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated:
            reason = terminated.get("reason") or f"ExitCode:{terminated.get('exitCode')}"
    if pod.get("metadata", {}).get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return [
        pod["metadata"]["name"],
        f"{ready}/{len(spec.get('containers') or [])}",
        reason,
        str(restarts),
        _age(pod["metadata"].get("creationTimestamp")),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"0/{len(gates)}" if gates else "<none>",
    ]


def _address(node: Obj, kind: str) -> str:
    found = [
        a["address"] for a in node.get("status", {}).get("addresses", []) if a.get("type") == kind
    ]
    return found[0] if found else "<none>"


def _node(node: Obj) -> list[Any]:
    status = node.get("status", {})
    ready = next((c for c in status.get("conditions", []) if c.get("type") == "Ready"), None)
    state = "Ready" if ready and ready.get("status") == "True" else "NotReady"
    if ready is None:
        state = "Unknown"
    if node.get("spec", {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = node["metadata"].get("labels") or {}
    roles = sorted(
        {
            key.removeprefix("node-role.kubernetes.io/")
            for key in labels
            if key.startswith("node-role.kubernetes.io/")
        }
        | ({labels["kubernetes.io/role"]} if labels.get("kubernetes.io/role") else set())
    )
    info = status.get("nodeInfo") or {}
    return [
        node["metadata"]["name"],
        state,
        ",".join(r for r in roles if r) or "<none>",
        _age(node["metadata"].get("creationTimestamp")),
        info.get("kubeletVersion", ""),
        _address(node, "InternalIP"),
        _address(node, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _ports(ports: list[Obj]) -> str:
    shown = []
    for port in ports:
        text = f"{port.get('port')}"
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        shown.append(f"{text}/{port.get('protocol', 'TCP')}")
    return ",".join(shown) or "<none>"


def _service(service: Obj) -> list[Any]:
    spec = service.get("spec", {})
    external = spec.get("externalIPs") or []
    ingress = service.get("status", {}).get("loadBalancer", {}).get("ingress") or []
    external = external + [i.get("ip") or i.get("hostname") for i in ingress]
    selector = spec.get("selector") or {}
    kind = spec.get("type", "ClusterIP")
    return [
        service["metadata"]["name"],
        kind,
        spec.get("clusterIP") or "<none>",
        ",".join(external) or ("<pending>" if kind == "LoadBalancer" else "<none>"),
        _ports(spec.get("ports") or []),
        _age(service["metadata"].get("creationTimestamp")),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


def _selector(selector: Obj | None) -> str:
    selector = selector or {}
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = ",".join(expression.get("values") or [])
        terms.append(
            {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})"}.get(
                operator, key if operator == "Exists" else f"!{key}"
            )
        )
    return ",".join(terms) or "<none>"


def _access_modes(modes: list[str]) -> str:
    short = {
        "ReadWriteOnce": "RWO",
        "ReadOnlyMany": "ROX",
        "ReadWriteMany": "RWX",
        "ReadWriteOncePod": "RWOP",
    }
    return ",".join(short.get(m, m) for m in modes)


def _pv(pv: Obj) -> list[Any]:
    spec, status = pv.get("spec", {}), pv.get("status", {})
    claim = spec.get("claimRef") or {}
    return [
        pv["metadata"]["name"],
        (spec.get("capacity") or {}).get("storage", ""),
        _access_modes(spec.get("accessModes") or []),
        spec.get("persistentVolumeReclaimPolicy", ""),
        status.get("phase", ""),
        f"{claim['namespace']}/{claim['name']}" if claim.get("name") else "",
        spec.get("storageClassName", ""),
        spec.get("volumeAttributesClassName") or "<unset>",
        status.get("reason", ""),
        _age(pv["metadata"].get("creationTimestamp")),
        spec.get("volumeMode") or "<unset>",
    ]


def _pvc(pvc: Obj) -> list[Any]:
    spec, status = pvc.get("spec", {}), pvc.get("status", {})
    bound = status.get("phase") == "Bound"
    return [
        pvc["metadata"]["name"],
        "Terminating" if pvc["metadata"].get("deletionTimestamp") else status.get("phase", ""),
        spec.get("volumeName", ""),
        (status.get("capacity") or {}).get("storage", "") if bound else "",
        _access_modes(status.get("accessModes") or []) if bound else "",
        spec.get("storageClassName") or "",
        spec.get("volumeAttributesClassName") or "<unset>",
        _age(pvc["metadata"].get("creationTimestamp")),
        spec.get("volumeMode") or "<unset>",
    ]


def _event(event: Obj) -> list[Any]:
    involved = event.get("involvedObject") or {}
    source = event.get("source") or {}
    last = event.get("lastTimestamp") or event.get("eventTime")
    first = event.get("firstTimestamp") or event.get("eventTime")
    return [
        _age(last),
        event.get("type", ""),
        event.get("reason", ""),
        f"{involved.get('kind', '').lower()}/{involved.get('name', '')}",
        involved.get("fieldPath", ""),
        ", ".join(v for v in (source.get("component"), source.get("host")) if v),
        event.get("message", "").strip(),
        _age(first),
        str(event.get("count", 1)),
        event["metadata"]["name"],
    ]


Printer = tuple[list[Obj], Callable[[Obj], list[Any]]]
PRINTERS: dict[str, Printer] = {
    "pods": (
        [
            NAME,
            _col("Ready"),
            _col("Status"),
            _col("Restarts"),
            AGE,
            _col("IP", 1),
            _col("Node", 1),
            _col("Nominated Node", 1),
            _col("Readiness Gates", 1),
        ],
        _pod,
    ),
    "nodes": (
        [
            NAME,
            _col("Status"),
            _col("Roles"),
            AGE,
            _col("Version"),
            _col("Internal-IP", 1),
            _col("External-IP", 1),
            _col("OS-Image", 1),
            _col("Kernel-Version", 1),
            _col("Container-Runtime", 1),
        ],
        _node,
    ),
    "services": (
        [
            NAME,
            _col("Type"),
            _col("Cluster-IP"),
            _col("External-IP"),
            _col("Port(s)"),
            AGE,
            _col("Selector", 1),
        ],
        _service,
    ),
    "namespaces": (
        [NAME, _col("Status"), AGE],
        lambda o: [
            o["metadata"]["name"],
            o.get("status", {}).get("phase", ""),
            _age(o["metadata"].get("creationTimestamp")),
        ],
    ),
    "configmaps": (
        [NAME, _col("Data", kind="integer"), AGE],
        lambda o: [
            o["metadata"]["name"],
            len(o.get("data") or {}) + len(o.get("binaryData") or {}),
            _age(o["metadata"].get("creationTimestamp")),
        ],
    ),
    "secrets": (
        [NAME, _col("Type"), _col("Data", kind="integer"), AGE],
        lambda o: [
            o["metadata"]["name"],
            o.get("type", "Opaque"),
            len(o.get("data") or {}),
            _age(o["metadata"].get("creationTimestamp")),
        ],
    ),
    "networkpolicies": (
        [NAME, _col("Pod-Selector"), AGE],
        lambda o: [
            o["metadata"]["name"],
            _selector(o.get("spec", {}).get("podSelector")),
            _age(o["metadata"].get("creationTimestamp")),
        ],
    ),
    "persistentvolumes": (
        [
            NAME,
            _col("Capacity"),
            _col("Access Modes"),
            _col("Reclaim Policy"),
            _col("Status"),
            _col("Claim"),
            _col("StorageClass"),
            _col("VolumeAttributesClass"),
            _col("Reason"),
            AGE,
            _col("VolumeMode", 1),
        ],
        _pv,
    ),
    "persistentvolumeclaims": (
        [
            NAME,
            _col("Status"),
            _col("Volume"),
            _col("Capacity"),
            _col("Access Modes"),
            _col("StorageClass"),
            _col("VolumeAttributesClass"),
            AGE,
            _col("VolumeMode", 1),
        ],
        _pvc,
    ),
    "events": (
        [
            _col("Last Seen"),
            _col("Type"),
            _col("Reason"),
            _col("Object"),
            _col("Subobject", 1),
            _col("Source", 1),
            _col("Message"),
            _col("First Seen", 1),
            _col("Count", 1),
            _col("Name", 1, fmt="name"),
        ],
        _event,
    ),
}
DEFAULT: Printer = (
    [NAME, _col("Created At", kind="date", fmt="date-time")],
    lambda o: [o["metadata"]["name"], o["metadata"].get("creationTimestamp", "")],
)


def _row_object(obj: Obj, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def table(resource: str, answer: Obj, include_object: str | None) -> Obj:
    """`answer` (a list, or one object) as a Table."""
    include = include_object or "Metadata"
    if include not in ("None", "Metadata", "Object"):
        raise ApiError(
            400,
            "BadRequest",
            f'includeObject: Unsupported value: "{include}": supported values: '
            '"Metadata", "None", "Object"',
        )
    columns, cells = PRINTERS.get(resource, DEFAULT)
    listed = answer.get("items") if "items" in answer else [answer]
    rows = []
    for obj in listed or []:
        row: Obj = {"cells": cells(obj)}
        shown = _row_object(obj, include)
        if shown is not None:
            row["object"] = shown
        rows.append(row)
    metadata = {
        k: v for k, v in answer.get("metadata", {}).items() if k in ("resourceVersion", "continue")
    }
    if "items" not in answer:
        metadata = {"resourceVersion": answer.get("metadata", {}).get("resourceVersion", "")}
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    }
