"""The resources the stand-in serves: kind, whether namespaced, and the group/version; and
admission, which refuses what kube-apiserver's validation refuses."""

from __future__ import annotations

from typing import Any

from localcloud.kubernetes import apps, authorization, networking, rbac, validation

Obj = dict[str, Any]

# Group/version of the resources not in core v1 (each group's module lists its own).
GROUP_RESOURCES = {
    networking.GROUP_VERSION: networking.RESOURCES,
    apps.GROUP_VERSION: apps.RESOURCES,
    rbac.GROUP_VERSION: rbac.RESOURCES,
    authorization.GROUP_VERSION: authorization.RESOURCES,
}
# Resources that are only ever created and answered (reviews), never stored or read back.
CREATE_ONLY = frozenset(authorization.RESOURCES)
KINDS = {  # resource -> (kind, namespaced)
    "namespaces": ("Namespace", False),
    "nodes": ("Node", False),
    "pods": ("Pod", True),
    "services": ("Service", True),
    "configmaps": ("ConfigMap", True),
    "secrets": ("Secret", True),
    "events": ("Event", True),
    "persistentvolumes": ("PersistentVolume", False),
    "persistentvolumeclaims": ("PersistentVolumeClaim", True),
    **{r: kind for resources in GROUP_RESOURCES.values() for r, kind in resources.items()},
}


def api_version(resource: str) -> str:
    """The group/version serving `resource`: core `v1` unless another group's."""
    return next((gv for gv, rs in GROUP_RESOURCES.items() if resource in rs), "v1")


def admit(resource: str, obj: Obj, current: Obj | None = None) -> None:
    """Refuse what kube-apiserver refuses (validation.py); may normalise `obj` in place."""
    rejection = validation.admit(resource, KINDS[resource][0], obj, current)
    if rejection is not None:
        raise rejection
