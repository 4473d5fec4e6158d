"""API discovery as kube-apiserver serves it: /api, /api/v1, /apis, /apis/<group> and
/apis/<group>/<version>, derived from the KINDS registry, so a kind another module adds to
it (any group, any version) is discovered without a change here.

What a resource is called (short names, singular name, categories) and which verbs it
takes are kube-apiserver's, from a table of the standard resources; a resource missing
from the table is listed with its kind's lower-case singular name and the verbs every
stored kind takes. kubectl 1.32 asks for aggregated discovery (`as=APIGroupDiscoveryList`)
first and falls back to these documents when the answer is plain `application/json`."""

from __future__ import annotations

from typing import Any

from localcloud.kubernetes.resources import CREATE_ONLY, KINDS, api_version

Obj = dict[str, Any]

STORED_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update"]
SHORT_NAMES = {  # kube-apiserver's (`kubectl api-resources`)
    "namespaces": ["ns"],
    "nodes": ["no"],
    "pods": ["po"],
    "services": ["svc"],
    "configmaps": ["cm"],
    "events": ["ev"],
    "persistentvolumes": ["pv"],
    "persistentvolumeclaims": ["pvc"],
    "networkpolicies": ["netpol"],
    "serviceaccounts": ["sa"],
    "daemonsets": ["ds"],
}
# what `kubectl get all` lists
CATEGORIES = {"pods": ["all"], "services": ["all"], "daemonsets": ["all"]}
STATUS_SUBRESOURCES = frozenset(
    {
        "pods",
        "nodes",
        "services",
        "namespaces",
        "persistentvolumes",
        "persistentvolumeclaims",
        "daemonsets",
    }
)


def _resource(resource: str) -> Obj:
    kind, namespaced = KINDS[resource]
    entry: Obj = {
        "name": resource,
        "singularName": kind.lower(),
        "namespaced": namespaced,
        "kind": kind,
        "verbs": ["create"] if resource in CREATE_ONLY else STORED_VERBS,
    }
    if resource in SHORT_NAMES:
        entry["shortNames"] = SHORT_NAMES[resource]
    if resource in CATEGORIES:
        entry["categories"] = CATEGORIES[resource]
    return entry


def _subresources(resource: str) -> list[Obj]:
    kind, namespaced = KINDS[resource]
    found = []
    if resource in STATUS_SUBRESOURCES:
        found.append(
            {
                "name": f"{resource}/status",
                "singularName": "",
                "namespaced": namespaced,
                "kind": kind,
                "verbs": ["get", "patch", "update"],
            }
        )
    if resource == "pods":
        found.append(
            {
                "name": "pods/binding",
                "singularName": "",
                "namespaced": True,
                "kind": "Binding",
                "verbs": ["create"],
            }
        )
        found.append(
            {
                "name": "pods/log",
                "singularName": "",
                "namespaced": True,
                "kind": "Pod",
                "verbs": ["get"],
            }
        )
    return found


def group_versions() -> dict[str, list[str]]:
    """Group -> its versions ("" is the core group), in the order first seen."""
    found: dict[str, list[str]] = {}
    for resource in KINDS:
        group, _, version = api_version(resource).rpartition("/")
        versions = found.setdefault(group, [])
        if version not in versions:
            versions.append(version)
    return found


def resource_list(group_version: str) -> Obj | None:
    resources = [r for r in KINDS if api_version(r) == group_version]
    if not resources:
        return None
    listed: list[Obj] = []
    for resource in resources:
        listed += [_resource(resource), *_subresources(resource)]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": listed,
    }


def api_group(group: str) -> Obj | None:
    versions = group_versions().get(group)
    if not group or not versions:
        return None
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": entries,
        "preferredVersion": entries[0],
    }


def answer(path: str) -> Obj | None:
    """The discovery document at `path` (trailing slash ignored), or None if `path` is not
    a discovery path."""
    path = path.rstrip("/")
    if path == "/api":
        return {
            "kind": "APIVersions",
            "versions": group_versions().get("", []),
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
        }
    if path == "/apis":
        groups = [api_group(g) for g in group_versions() if g]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
    parts = path.split("/")[1:]
    if len(parts) == 2 and parts[0] == "api":
        return resource_list(parts[1])
    if len(parts) == 2 and parts[0] == "apis":
        return api_group(parts[1])
    if len(parts) == 3 and parts[0] == "apis":
        return resource_list(f"{parts[1]}/{parts[2]}")
    return None
