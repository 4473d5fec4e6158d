"""rbac.authorization.k8s.io/v1 for the stand-in: Role, ClusterRole, RoleBinding and
ClusterRoleBinding, stored like the other kinds and validated as kube-apiserver validates
them (`pkg/apis/rbac/validation`) in their essentials: names are path segments, a rule has
verbs and either resources (with API groups) or non-resource URLs (cluster roles only), a
binding's roleRef names a Role or ClusterRole of this group and cannot change, subjects are
Users, Groups or ServiceAccounts. The bootstrap roles kube-apiserver creates at start
(cluster-admin, system:discovery, system:basic-user, system:public-info-viewer) are here too.

Rule matching (`rule_allows`) is the RBAC authorizer's (`pkg/apis/rbac/v1/evaluation_helpers.go`):
`*` matches any verb, group or resource, `*/scale` one subresource of any resource (there is
no `pods/*`: that is the literal name of no resource, and matches nothing); resourceNames
narrow a rule to named objects; a non-resource URL ending in `*` is a prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from localcloud.kubernetes.rules import FieldError, invalid, required, supported

Obj = dict[str, Any]
GROUP = "rbac.authorization.k8s.io"
VERSION = "v1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
RESOURCES = {  # resource -> (kind, namespaced)
    "roles": ("Role", True),
    "clusterroles": ("ClusterRole", False),
    "rolebindings": ("RoleBinding", True),
    "clusterrolebindings": ("ClusterRoleBinding", False),
}
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")
AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"


# -- validation ------------------------------------------------------------------------------
def path_segment_name(value: str) -> list[str]:
    """`ValidatePathSegmentName`: RBAC names may hold `:` (system:discovery), not `/` or `%`."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def _rule(rule: Any, path: str, namespaced: bool) -> list[FieldError]:
    if not isinstance(rule, dict):
        return [FieldError("Invalid value", path, "must be an object", rule)]
    errors = []
    if not rule.get("verbs"):
        errors.append(required(f"{path}.verbs", "verbs must contain at least one value"))
    if rule.get("nonResourceURLs"):
        if namespaced:
            errors += invalid(
                f"{path}.nonResourceURLs",
                rule["nonResourceURLs"],
                ["namespaced rules cannot apply to non-resource URLs"],
            )
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errors += invalid(
                f"{path}.nonResourceURLs",
                rule["nonResourceURLs"],
                ["rules cannot apply to both regular resources and non-resource URLs"],
            )
        return errors
    if not rule.get("apiGroups"):
        errors.append(
            required(f"{path}.apiGroups", "resource rules must supply at least one api group")
        )
    if not rule.get("resources"):
        errors.append(
            required(f"{path}.resources", "resource rules must supply at least one resource")
        )
    return errors


def _role(obj: Obj, namespaced: bool) -> list[FieldError]:
    errors = []
    for index, rule in enumerate(obj.get("rules") or []):
        errors += _rule(rule, f"rules[{index}]", namespaced)
    return errors


def role(obj: Obj) -> list[FieldError]:
    return _role(obj, namespaced=True)


def cluster_role(obj: Obj) -> list[FieldError]:
    return _role(obj, namespaced=False)


def _binding(obj: Obj, role_kinds: tuple[str, ...], namespaced: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    ref = obj.get("roleRef")
    if not isinstance(ref, dict):
        return [required("roleRef", "")]
    errors += supported("roleRef.apiGroup", ref.get("apiGroup") or "", (GROUP,))
    if not ref.get("kind"):
        errors.append(required("roleRef.kind", ""))
    else:
        errors += supported("roleRef.kind", ref["kind"], role_kinds)
    if not ref.get("name"):
        errors.append(required("roleRef.name", ""))
    else:
        errors += invalid("roleRef.name", ref["name"], path_segment_name(ref["name"]))
    for index, subject in enumerate(obj.get("subjects") or []):
        at = f"subjects[{index}]"
        if not isinstance(subject, dict):
            errors += invalid(at, subject, ["must be an object"])
            continue
        if not subject.get("name"):
            errors.append(required(f"{at}.name", ""))
        kind = subject.get("kind")
        if kind not in SUBJECT_KINDS:
            errors += supported(f"{at}.kind", kind or "", SUBJECT_KINDS)
        elif kind == "ServiceAccount":
            errors += supported(f"{at}.apiGroup", subject.get("apiGroup") or "", ("",))
            if not namespaced and not subject.get("namespace"):
                errors.append(required(f"{at}.namespace", ""))
        else:
            errors += supported(f"{at}.apiGroup", subject.get("apiGroup") or "", (GROUP,))
    return errors


def role_binding(obj: Obj) -> list[FieldError]:
    return _binding(obj, ("Role", "ClusterRole"), namespaced=True)


def cluster_role_binding(obj: Obj) -> list[FieldError]:
    return _binding(obj, ("ClusterRole",), namespaced=False)


def binding_update(obj: Obj, current: Obj) -> list[FieldError]:
    """A binding's roleRef cannot change (delete and recreate the binding instead)."""
    if obj.get("roleRef") != current.get("roleRef"):
        return invalid("roleRef", obj.get("roleRef"), ["cannot change roleRef"])
    return []


SPECS = {
    "roles": role,
    "clusterroles": cluster_role,
    "rolebindings": role_binding,
    "clusterrolebindings": cluster_role_binding,
}
UPDATES = {"rolebindings": binding_update, "clusterrolebindings": binding_update}


# -- the bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy) -------------------
def _bootstrap(name: str) -> Obj:
    return {
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
        }
    }


def _bound(name: str, *groups: str) -> Obj:
    return {
        **_bootstrap(name),
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": group} for group in groups],
    }


_HEALTH = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
BOOTSTRAP_CLUSTER_ROLES = [
    {
        **_bootstrap("cluster-admin"),
        "rules": [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]},
        ],
    },
    {
        **_bootstrap("system:discovery"),
        "rules": [
            {
                "nonResourceURLs": [
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/openapi",
                    "/openapi/*",
                    *_HEALTH,
                ],
                "verbs": ["get"],
            }
        ],
    },
    {
        **_bootstrap("system:public-info-viewer"),
        "rules": [{"nonResourceURLs": _HEALTH, "verbs": ["get"]}],
    },
    {
        **_bootstrap("system:basic-user"),
        "rules": [
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                "verbs": ["create"],
            }
        ],
    },
]
BOOTSTRAP_CLUSTER_ROLE_BINDINGS = [
    _bound("cluster-admin", MASTERS),
    _bound("system:discovery", AUTHENTICATED),
    _bound("system:public-info-viewer", AUTHENTICATED, "system:unauthenticated"),
    _bound("system:basic-user", AUTHENTICATED),
]


# -- evaluation ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Attributes:
    """What a request asks (an authorizer's `Attributes`): a verb on a resource (with its
    group, namespace, name, subresource) or on a non-resource path."""

    verb: str
    resource: str = ""
    group: str = ""
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    path: str = ""  # non-resource requests only
    resource_request: bool = True


def _has(values: list[str], value: str) -> bool:
    return "*" in values or value in values


def _resource_matches(resources: list[str], resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for allowed in resources:
        if allowed in ("*", combined):
            return True
        if subresource and allowed == f"*/{subresource}":
            return True
    return False


def _url_matches(urls: list[str], path: str) -> bool:
    return any(
        url == "*" or url == path or (url.endswith("*") and path.startswith(url[:-1]))
        for url in urls
    )


def rule_allows(rule: Obj, attributes: Attributes) -> bool:
    if not _has(rule.get("verbs") or [], attributes.verb):
        return False
    if not attributes.resource_request:
        return _url_matches(rule.get("nonResourceURLs") or [], attributes.path)
    names = rule.get("resourceNames") or []
    return (
        _has(rule.get("apiGroups") or [], attributes.group)
        and _resource_matches(
            rule.get("resources") or [], attributes.resource, attributes.subresource
        )
        and (not names or attributes.name in names)
    )


def applies_to(subject: Obj, username: str, groups: tuple[str, ...], namespace: str) -> bool:
    """Whether a binding's subject names the user; `namespace` is the binding's ("" for a
    ClusterRoleBinding): a ServiceAccount subject without a namespace is in it."""
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return name == username
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        account_namespace = subject.get("namespace") or namespace
        return bool(account_namespace) and (
            username == f"system:serviceaccount:{account_namespace}:{name}"
        )
    return False
