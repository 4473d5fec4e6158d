"""The resources the stand-in serves: kind, whether namespaced, and the group/version; and
admission, which refuses what kube-apiserver's validation refuses."""

from __future__ import annotations

from typing import Any

from localcloud.kubernetes import networking, validation

Obj = dict[str, Any]

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
    **networking.RESOURCES,
}


def api_version(resource: str) -> str:
    """The group/version serving `resource`: core `v1` unless another group's."""
    return networking.GROUP_VERSION if resource in networking.RESOURCES else "v1"


def admit(resource: str, obj: Obj, current: Obj | None = None) -> None:
    """Refuse what kube-apiserver refuses (validation.py); may normalise `obj` in place."""
    rejection = validation.admit(resource, KINDS[resource][0], obj, current)
    if rejection is not None:
        raise rejection
