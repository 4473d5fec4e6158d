"""RBAC's escalation prevention, as kube-apiserver's RBAC REST storage makes it
(`pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased`): nobody
grants through RBAC what they do not hold themselves.

Creating or updating a Role or ClusterRole is allowed if the caller may `escalate` that role
resource (the request's name and namespace: none on a create), or else holds every rule it
grants (a Role's in its namespace). Creating or updating a RoleBinding or ClusterRoleBinding
is allowed if the caller may `bind` the role it refers to (its name, in the binding's
namespace), or else holds every rule of that role (a RoleBinding's in its namespace; a role
that does not exist is 404). Otherwise 403 with kube-apiserver's message. An update that
changes only the fields garbage collection writes (ownerReferences, finalizers) is not
checked. Cluster admins pass: the AmazonEKSClusterAdminPolicy access policy authorizes
`escalate` and `bind`, and `*` rules hold everything.

"Holds" is `validation.Covers`: each granted rule is broken down to one verb, group,
resource (or non-resource URL) and resource name, and each piece must be matched by one rule
the caller holds (`*` anything, `*/sub` a subresource of any resource, a URL ending in `*` a
prefix, a rule without resourceNames any name).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from localcloud.kubernetes import patches, rbac
from localcloud.kubernetes.access_entries import UserInfo
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.rbac import Attributes

if TYPE_CHECKING:
    from localcloud.kubernetes.authorization import Authorizer
    from localcloud.kubernetes.request_body import Body
    from localcloud.kubernetes.store import ObjectStore

Obj = dict[str, Any]
ROLES = ("roles", "clusterroles")
BINDINGS = ("rolebindings", "clusterrolebindings")
_GC_FIELDS = ("ownerReferences", "finalizers", "resourceVersion")


# -- Covers (component-helpers/auth/rbac/validation/policy_comparator.go) --------------------
def _strings(rule: Obj, key: str) -> list[str]:
    values = rule.get(key)
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def breakdown(rule: Obj) -> list[Obj]:
    """`rule` as rules of one verb, group, resource and resource name (or URL and verb)."""
    pieces: list[Obj] = []
    verbs, names = _strings(rule, "verbs"), _strings(rule, "resourceNames")
    for group in _strings(rule, "apiGroups"):
        for resource in _strings(rule, "resources"):
            for verb in verbs:
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                pieces += [{**base, "resourceNames": [n]} for n in names] if names else [base]
    for url in _strings(rule, "nonResourceURLs"):
        pieces += [{"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs]
    return pieces


def _resource_covered(owned: list[str], resource: str) -> bool:
    if "*" in owned or resource in owned:
        return True
    return "/" in resource and f"*/{resource.split('/', 1)[1]}" in owned


def _url_covered(owned: list[str], url: str) -> bool:
    return any(o == url or (o.endswith("*") and url.startswith(o.rstrip("*"))) for o in owned)


def covers(owner: Obj, piece: Obj) -> bool:
    """`ruleCovers`: whether one held rule covers one broken-down piece."""
    verbs, groups = _strings(owner, "verbs"), _strings(owner, "apiGroups")
    names = _strings(owner, "resourceNames")
    return (
        ("*" in verbs or set(piece["verbs"]) <= set(verbs))
        and ("*" in groups or set(piece.get("apiGroups", [])) <= set(groups))
        and all(
            _resource_covered(_strings(owner, "resources"), r) for r in piece.get("resources", [])
        )
        and all(
            _url_covered(_strings(owner, "nonResourceURLs"), u)
            for u in piece.get("nonResourceURLs", [])
        )
        # a rule with resourceNames covers only pieces naming one of them
        and (
            not names
            or (bool(piece.get("resourceNames")) and set(piece["resourceNames"]) <= set(names))
        )
    )


def missing(held: list[Obj], granted: list[Obj]) -> list[Obj]:
    """The pieces of `granted` no rule in `held` covers."""
    pieces = [piece for rule in granted if isinstance(rule, dict) for piece in breakdown(rule)]
    return [piece for piece in pieces if not any(covers(rule, piece) for rule in held)]


def _compact(pieces: list[Obj]) -> list[Obj]:
    """`CompactRules`: pieces differing only in their verb become one rule."""
    merged: dict[str, Obj] = {}
    for piece in pieces:
        key = json.dumps({k: v for k, v in piece.items() if k != "verbs"}, sort_keys=True)
        if key in merged:
            merged[key]["verbs"] = [*merged[key]["verbs"], *piece["verbs"]]
        else:
            merged[key] = {**piece, "verbs": list(piece["verbs"])}
    return list(merged.values())


def _quoted(values: list[str]) -> str:
    """Go's `%q` of a []string: `["a" "b"]`."""
    return "[" + " ".join(json.dumps(v) for v in values) + "]"


def compact_string(rule: Obj) -> str:
    """`rbacv1helpers.CompactString`: `{APIGroups:["apps"], Resources:["deployments"], ...}`."""
    fields = (
        ("APIGroups", "apiGroups"),
        ("Resources", "resources"),
        ("NonResourceURLs", "nonResourceURLs"),
        ("ResourceNames", "resourceNames"),
        ("Verbs", "verbs"),
    )
    return (
        "{" + ", ".join(f"{go}:{_quoted(rule[key])}" for go, key in fields if rule.get(key)) + "}"
    )


def _refused(user: UserInfo, resource: str, name: str, uncovered: list[Obj]) -> ApiError:
    """`NewForbidden(groupResource, name, ConfirmNoEscalation's error)`."""
    held = "\n".join(sorted({compact_string(rule) for rule in _compact(uncovered)}))
    reason = (
        f"user {json.dumps(user.username)} (groups={_quoted(list(user.groups))}) is attempting "
        f"to grant RBAC permissions not currently held:\n{held}"
    )
    return ApiError(
        403,
        "Forbidden",
        f'{resource}.{rbac.GROUP} "{name}" is forbidden: {reason}',
        name or None,
        resource,
    )


# -- the check ------------------------------------------------------------------------------
def _only_gc_fields_change(new: Obj, current: Obj) -> bool:
    """`IsOnlyMutatingGCFields`: everything but ownerReferences and finalizers unchanged."""

    def without(obj: Obj) -> Obj:
        metadata = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _GC_FIELDS}
        return {**obj, "metadata": metadata}

    return without(new) == without(current)


class EscalationCheck:
    """Refuses the RBAC writes that would grant what the caller does not hold."""

    def __init__(self, store: ObjectStore, authorizer: Authorizer):
        self.store = store
        self.authorizer = authorizer

    def confirm(
        self,
        user: UserInfo,
        method: str,
        resource: str,
        namespace: str,
        name: str | None,
        body: Body,
    ) -> None:
        """Raise 403 (or the referenced role's 404) when a create, update or patch of an
        RBAC object would escalate; return for anything else."""
        if resource not in (*ROLES, *BINDINGS) or method not in ("POST", "PUT", "PATCH"):
            return
        if (method == "POST") != (name is None):
            return  # not a write of one object: the handlers answer it
        obj = body.value if method != "PATCH" else None
        if name is not None:
            try:
                current = self.store.get(resource, namespace, name)
            except ApiError:
                return  # 404 from the write itself
            obj = patches.apply(current, body.value, body.patch_type) if obj is None else obj
            if isinstance(obj, dict) and _only_gc_fields_change(obj, current):
                return
        if not isinstance(obj, dict):
            return  # refused as undecodable by the write
        object_name = name or (obj.get("metadata") or {}).get("name") or ""
        if resource in ROLES:
            self._confirm_role(user, resource, namespace, name or "", object_name, obj)
        else:
            self._confirm_binding(user, resource, namespace, object_name, obj)

    def _confirm_role(
        self, user: UserInfo, resource: str, namespace: str, name: str, object_name: str, obj: Obj
    ) -> None:
        may_escalate = Attributes("escalate", resource, rbac.GROUP, namespace, name)
        if self.authorizer.allows(user, may_escalate):
            return
        rules = obj.get("rules")
        granted = rules if isinstance(rules, list) else []
        uncovered = missing(self.authorizer.rules(user, namespace), granted)
        if uncovered:
            raise _refused(user, resource, object_name, uncovered)

    def _confirm_binding(
        self, user: UserInfo, resource: str, namespace: str, object_name: str, obj: Obj
    ) -> None:
        ref = obj.get("roleRef")
        if not isinstance(ref, dict) or ref.get("kind") not in ("Role", "ClusterRole"):
            return  # refused by validation
        role_resource = "roles" if ref["kind"] == "Role" else "clusterroles"
        role_name, group = (str(ref.get(key) or "") for key in ("name", "apiGroup"))
        may_bind = Attributes("bind", role_resource, group, namespace, role_name)
        if self.authorizer.allows(user, may_bind):
            return
        role = self.store.get(role_resource, namespace, role_name, frozen=True)  # 404 if none
        rules = role.get("rules") or []
        uncovered = missing(self.authorizer.rules(user, namespace), list(rules))
        if uncovered:
            raise _refused(user, resource, object_name, uncovered)
