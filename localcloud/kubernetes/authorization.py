"""May this user do this: EKS's authorizers in front of the stand-in's handlers.

A request is turned into authorizer attributes as kube-apiserver's `RequestInfoFactory`
does (a verb on a resource, or on a non-resource path such as /version or /apis), then
allowed if the user's EKS access policy allows it (AmazonEKSClusterAdminPolicy: anything)
or if RBAC does (`rbac.py`: the rules of every ClusterRoleBinding naming the user or one of
its groups, and in a namespace of every RoleBinding there). Otherwise 403 Forbidden with
kube-apiserver's message. authorization.k8s.io's SelfSubjectAccessReview and
SelfSubjectRulesReview ask the same authorizer (`kubectl auth can-i [--list]`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from localcloud.kubernetes.access_entries import UserInfo
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.rbac import Attributes, applies_to, rule_allows

if TYPE_CHECKING:
    from localcloud.kubernetes.store import ObjectStore

Obj = dict[str, Any]
GROUP = "authorization.k8s.io"
VERSION = "v1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
RESOURCES = {  # resource -> (kind, namespaced): created and answered, never stored
    "selfsubjectaccessreviews": ("SelfSubjectAccessReview", False),
    "selfsubjectrulesreviews": ("SelfSubjectRulesReview", False),
}
_STRING_FIELDS = (
    "namespace",
    "verb",
    "group",
    "version",
    "resource",
    "subresource",
    "name",
    "path",
)
_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def request_attributes(method: str, path: str, query: dict[str, str]) -> Attributes:
    """What the request asks, as `RequestInfoFactory.NewRequestInfo` reads it."""
    parts = [p for p in path.strip("/").split("/") if p] or [""]
    if parts[0] == "api" and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return Attributes(verb=method.lower(), path=path, resource_request=False)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if method == "GET":
        verb = "get" if name else ("watch" if query.get("watch") in ("true", "1") else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    return Attributes(verb, resource, group, namespace, name, subresource)


def forbidden(user: UserInfo, attributes: Attributes) -> ApiError:
    """kube-apiserver's 403 (`forbiddenMessage` and `NewForbidden`)."""
    if not attributes.resource_request:
        return ApiError(
            403,
            "Forbidden",
            f'forbidden: User "{user.username}" cannot {attributes.verb} path "{attributes.path}"',
        )
    resource = attributes.resource
    if attributes.subresource:
        resource = f"{resource}/{attributes.subresource}"
    where = (
        f'in the namespace "{attributes.namespace}"'
        if attributes.namespace
        else "at the cluster scope"
    )
    reason = (
        f'User "{user.username}" cannot {attributes.verb} resource "{resource}" in API group '
        f'"{attributes.group}" {where}'
    )
    qualified = (
        f"{attributes.resource}.{attributes.group}" if attributes.group else attributes.resource
    )
    subject = f'{qualified} "{attributes.name}"' if attributes.name else qualified
    error = ApiError(
        403, "Forbidden", f"{subject} is forbidden: {reason}", attributes.name, attributes.resource
    )
    if not attributes.name:
        error.name, error.kind = None, None
    return error


class Authorizer:
    """EKS access policies, then RBAC from the store's roles and bindings."""

    def __init__(self, store: ObjectStore):
        self.store = store

    def _items(self, resource: str, namespace: str | None) -> list[Obj]:
        items: list[Obj] = self.store.list(resource, namespace, None, None, frozen=True)["items"]
        return items

    def _role_rules(self, ref: Obj, namespace: str) -> list[Obj]:
        kind = ref.get("kind")
        resource, where = ("roles", namespace) if kind == "Role" else ("clusterroles", "")
        try:  # a binding to a role that does not exist (yet) grants nothing
            role = self.store.get(resource, where, ref.get("name", ""), frozen=True)
        except ApiError:
            return []
        return list(role.get("rules") or [])

    def rules(self, user: UserInfo, namespace: str) -> list[Obj]:
        """Every RBAC rule that applies to `user` in `namespace` ("" : cluster scope only)."""
        found: list[Obj] = []
        bindings = [(b, "") for b in self._items("clusterrolebindings", None)]
        if namespace:
            bindings += [(b, namespace) for b in self._items("rolebindings", namespace)]
        for binding, where in bindings:
            subjects = binding.get("subjects") or []
            if any(applies_to(s, user.username, user.groups, where) for s in subjects):
                found += self._role_rules(binding.get("roleRef") or {}, where)
        return found

    def allows(self, user: UserInfo, attributes: Attributes) -> bool:
        if user.cluster_admin:
            return True
        namespace = attributes.namespace if attributes.resource_request else ""
        return any(rule_allows(rule, attributes) for rule in self.rules(user, namespace))

    def authorize(self, user: UserInfo, attributes: Attributes) -> None:
        if not self.allows(user, attributes):
            raise forbidden(user, attributes)

    # -- authorization.k8s.io -----------------------------------------------------------
    def review(self, user: UserInfo, resource: str, body: Any) -> Obj:
        """A SelfSubjectAccessReview or SelfSubjectRulesReview answered (201)."""
        spec = _spec(RESOURCES[resource][0], body)
        status = (
            self._access_review(user, spec)
            if resource == "selfsubjectaccessreviews"
            else self._rules_review(user, spec)
        )
        return {
            "kind": RESOURCES[resource][0],
            "apiVersion": GROUP_VERSION,
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }

    def _access_review(self, user: UserInfo, spec: Obj) -> Obj:
        kind = "SelfSubjectAccessReview"
        asked, path = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        if asked is not None and path is not None:
            raise _invalid(
                kind,
                "spec.nonResourceAttributes",
                "cannot be specified in combination with resourceAttributes",
            )
        if asked is None and path is None:
            raise _invalid(
                kind,
                "spec.resourceAttributes",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                "Required value",
            )
        if asked is not None:
            attributes = Attributes(
                verb=asked.get("verb", ""),
                resource=asked.get("resource", ""),
                group=asked.get("group", ""),
                namespace=asked.get("namespace", ""),
                name=asked.get("name", ""),
                subresource=asked.get("subresource", ""),
            )
        else:
            assert path is not None
            attributes = Attributes(
                verb=path.get("verb", ""), path=path.get("path", ""), resource_request=False
            )
        if self.allows(user, attributes):
            reason = (
                "EKS access policy AmazonEKSClusterAdminPolicy"
                if user.cluster_admin
                else "allowed by RBAC"
            )
            return {"allowed": True, "reason": reason}
        return {"allowed": False}

    def _rules_review(self, user: UserInfo, spec: Obj) -> Obj:
        namespace = spec.get("namespace") or ""
        resource_rules, url_rules = [], []
        if user.cluster_admin:
            resource_rules.append({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})
            url_rules.append({"verbs": ["*"], "nonResourceURLs": ["*"]})
        for rule in self.rules(user, namespace):
            if rule.get("nonResourceURLs"):
                url_rules.append(
                    {"verbs": rule["verbs"], "nonResourceURLs": rule["nonResourceURLs"]}
                )
            else:
                resource_rules.append(
                    {
                        key: rule[key]
                        for key in ("verbs", "apiGroups", "resources", "resourceNames")
                        if rule.get(key)
                    }
                )
        return {
            "resourceRules": resource_rules,
            "nonResourceRules": url_rules,
            "incomplete": False,
        }


def _spec(kind: str, body: Any) -> Obj:
    """The review's spec, or 400 when the body does not decode as the kind."""
    undecodable = ApiError(
        400, "BadRequest", f'{kind} in version "v1" cannot be handled as a {kind}'
    )
    spec = body.get("spec", {}) if isinstance(body, dict) else None
    spec = {} if spec is None and isinstance(body, dict) else spec  # "spec": null
    if not isinstance(spec, dict) or not isinstance(spec.get("namespace", ""), str):
        raise undecodable
    for field in ("resourceAttributes", "nonResourceAttributes"):
        asked = spec.get(field)
        if asked is not None and (
            not isinstance(asked, dict)
            or not all(isinstance(v, str) for k, v in asked.items() if k in _STRING_FIELDS)
        ):
            raise undecodable
    return spec


def _invalid(kind: str, field: str, detail: str, type_: str = "Invalid value") -> ApiError:
    reasons = {"Invalid value": "FieldValueInvalid", "Required value": "FieldValueRequired"}
    message = f"{field}: {type_}: {detail}"
    return ApiError(
        422,
        "Invalid",
        f"{kind}.authorization.k8s.io is invalid: {message}",
        "",
        kind,
        [{"reason": reasons[type_], "message": f"{type_}: {detail}", "field": field}],
    )
