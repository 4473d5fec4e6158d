"""RBAC in the stand-in, as kube-apiserver enforces it: deploy/kubernetes/ applied by an
admin (EKS access policy), then the functions' groups get exactly what rbac.yaml grants and
a 403 with kube-apiserver's message for anything else; the RBAC kinds are validated; and
SelfSubjectAccessReview / SelfSubjectRulesReview answer `kubectl auth can-i`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from localcloud.cluster_access import apply, manifests
from localcloud.kubernetes.access_entries import CLUSTER_ADMIN_POLICY, AccessEntry, UserInfo
from localcloud.kubernetes.authorization import Authorizer, request_attributes
from localcloud.kubernetes.escalation import missing
from localcloud.kubernetes.rbac import Attributes, rule_allows
from localcloud.kubernetes.server import KubernetesApiServer
from localcloud.kubernetes.store import ObjectStore
from localcloud.sigv4 import SigningKey
from tests.support.kubernetes import auth_headers, authenticator_for, eks_token

CLUSTER = "gpudev-local"
ACCOUNT = "111122223333"


def key(name: str) -> SigningKey:
    return SigningKey(
        f"AKIA{name.upper():0<16}", f"{name}-secret", f"arn:aws:iam::{ACCOUNT}:role/{name}", "", ""
    )


ADMIN, READER, LIFECYCLE, NOBODY = key("admin"), key("reader"), key("lifecycle"), key("nobody")
DELEGATE, ROOT = key("delegate"), key("root")
HEADERS: dict[SigningKey, dict[str, str]] = {}


@pytest.fixture(scope="module")
def server() -> KubernetesApiServer:
    authenticator = authenticator_for(
        CLUSTER,
        (ADMIN, READER, LIFECYCLE, NOBODY),
        (
            AccessEntry(ADMIN.principal_arn, access_policies=(CLUSTER_ADMIN_POLICY,)),
            AccessEntry(READER.principal_arn, kubernetes_groups=("gpu-dev-readers",)),
            AccessEntry(LIFECYCLE.principal_arn, kubernetes_groups=("gpu-dev-lifecycle",)),
            AccessEntry(NOBODY.principal_arn),  # an entry, no group: discovery only
        ),
    )
    server = KubernetesApiServer(ObjectStore(), authenticator)
    apply(server.handle, eks_token(CLUSTER, ADMIN), manifests())
    return server


def call(
    server: KubernetesApiServer, who: SigningKey, method: str, path: str, body: Any = None
) -> tuple[int, Any]:
    raw = json.dumps(body).encode() if body is not None else b""
    if who not in HEADERS:  # a token is good for 15 minutes; signing one costs a session
        HEADERS[who] = auth_headers(CLUSTER, who)
    return server.handle(method, path, HEADERS[who], raw)


def pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }


def test_the_availability_updaters_group_cannot_create_a_pod(server: KubernetesApiServer):
    status, body = call(server, READER, "POST", "/api/v1/namespaces/gpu-dev/pods", pod("p"))
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        f'pods is forbidden: User "arn:aws:iam::{ACCOUNT}:role/reader" cannot create resource '
        '"pods" in API group "" in the namespace "gpu-dev"'
    )
    assert call(server, READER, "GET", "/api/v1/pods")[0] == 200
    assert call(server, READER, "GET", "/api/v1/nodes")[0] == 200
    assert call(server, READER, "GET", "/api/v1/namespaces/gpu-dev/secrets")[0] == 403


def test_the_lifecycle_manages_its_namespaces_and_nothing_else(server: KubernetesApiServer):
    created = call(server, LIFECYCLE, "POST", "/api/v1/namespaces/gpu-dev/pods", pod("life"))
    assert created[0] == 201, created
    assert call(server, LIFECYCLE, "DELETE", "/api/v1/namespaces/gpu-dev/pods/life")[0] == 200
    status, body = call(server, LIFECYCLE, "POST", "/api/v1/namespaces/default/pods", pod("x"))
    assert status == 403 and 'in the namespace "default"' in body["message"]
    # rbac.yaml grants no patch and no pods/exec; pods/log only `get`, in its namespaces.
    status, body = call(
        server, LIFECYCLE, "PATCH", "/api/v1/namespaces/gpu-dev/configmaps/c", {"data": {}}
    )
    assert status == 403 and body["details"] == {"name": "c", "kind": "configmaps"}
    assert body["message"].startswith('configmaps "c" is forbidden: ')
    for namespace in ("gpu-dev", "gpu-dev-profiling", "gpu-dev-docker"):  # allowed: no such pod
        status, body = call(server, LIFECYCLE, "GET", f"/api/v1/namespaces/{namespace}/pods/p/log")
        assert status == 404, body
    status, body = call(server, LIFECYCLE, "GET", "/api/v1/namespaces/default/pods/p/log")
    assert status == 403 and 'resource "pods/log"' in body["message"]
    status, body = call(server, READER, "GET", "/api/v1/namespaces/gpu-dev/pods/p/log")
    assert status == 403 and 'resource "pods/log"' in body["message"]
    status, body = call(server, LIFECYCLE, "POST", "/api/v1/namespaces/gpu-dev/pods/p/exec")
    assert status == 403
    # cluster-scoped: persistent volumes yes (gpu-dev-volumes), namespaces no.
    assert call(server, LIFECYCLE, "GET", "/api/v1/persistentvolumes")[0] == 200
    status, body = call(server, LIFECYCLE, "GET", "/api/v1/namespaces")
    assert status == 403 and body["message"].endswith("at the cluster scope")


def test_every_authenticated_user_may_discover_but_not_read(server: KubernetesApiServer):
    for path in ("/version", "/api", "/api/v1", "/apis", "/apis/rbac.authorization.k8s.io/v1"):
        assert call(server, NOBODY, "GET", path)[0] == 200, path
    status, body = call(server, NOBODY, "GET", "/metrics")
    assert status == 403
    assert body["message"] == (
        f'forbidden: User "arn:aws:iam::{ACCOUNT}:role/nobody" cannot get path "/metrics"'
    )
    assert call(server, NOBODY, "GET", "/api/v1/pods")[0] == 403


def test_the_applied_manifests_are_stored_in_their_groups(server: KubernetesApiServer):
    roles = call(server, ADMIN, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles")[1]
    names = {r["metadata"]["name"] for r in roles["items"]}
    assert {"gpu-dev-readers", "gpu-dev-volumes", "cluster-admin", "system:discovery"} <= names
    bindings = call(
        server, ADMIN, "GET", "/apis/rbac.authorization.k8s.io/v1/namespaces/gpu-dev/rolebindings"
    )[1]
    assert [b["metadata"]["name"] for b in bindings["items"]] == ["gpu-dev-lifecycle"]
    policies = call(
        server, ADMIN, "GET", "/apis/networking.k8s.io/v1/namespaces/gpu-dev/networkpolicies"
    )[1]
    assert "default-deny" in {p["metadata"]["name"] for p in policies["items"]}
    # namespace.yaml replaced the dev namespaces: the API server's label is set again
    labels = call(server, ADMIN, "GET", "/api/v1/namespaces/gpu-dev")[1]["metadata"]["labels"]
    assert labels["kubernetes.io/metadata.name"] == "gpu-dev"
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"


def test_a_bindings_role_ref_cannot_change(server: KubernetesApiServer):
    path = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/gpu-dev-readers"
    binding = json.loads(json.dumps(call(server, ADMIN, "GET", path)[1]))
    binding["roleRef"]["name"] = "cluster-admin"
    status, body = call(server, ADMIN, "PUT", path, binding)
    assert status == 422
    assert (
        "roleRef: Invalid value" in body["message"] and "cannot change roleRef" in (body["message"])
    )


@pytest.mark.parametrize(
    ("resource", "obj", "message"),
    [
        ("clusterroles", {"metadata": {"name": "a/b"}}, "metadata.name: Invalid value"),
        (
            "clusterroles",
            {"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]},
            "rules[0].verbs: Required value",
        ),
        (
            "clusterroles",
            {"metadata": {"name": "r"}, "rules": [{"resources": ["pods"], "verbs": ["get"]}]},
            "rules[0].apiGroups: Required value",
        ),
        (
            "clusterroles",
            {
                "metadata": {"name": "r"},
                "rules": [{"nonResourceURLs": ["/x"], "resources": ["pods"], "verbs": ["get"]}],
            },
            "rules cannot apply to both regular resources and non-resource URLs",
        ),
        (
            "clusterrolebindings",
            {
                "metadata": {"name": "b"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            },
            'roleRef.kind: Unsupported value: "Role"',
        ),
        (
            "clusterrolebindings",
            {
                "metadata": {"name": "b"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole"},
                "subjects": [{"kind": "Robot", "name": "r"}],
            },
            "roleRef.name: Required value",
        ),
    ],
)
def test_invalid_rbac_objects_are_refused(
    server: KubernetesApiServer, resource: str, obj: dict[str, Any], message: str
):
    status, body = call(
        server, ADMIN, "POST", f"/apis/rbac.authorization.k8s.io/v1/{resource}", obj
    )
    assert status == 422 and message in body["message"], body
    assert (
        call(server, ADMIN, "GET", f"/apis/rbac.authorization.k8s.io/v1/{resource}/r")[0] in (404,)
        or resource == "clusterrolebindings"
    )


def test_namespaced_roles_cannot_hold_non_resource_urls(server: KubernetesApiServer):
    role = {"metadata": {"name": "urls"}, "rules": [{"nonResourceURLs": ["/x"], "verbs": ["get"]}]}
    status, body = call(
        server, ADMIN, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/gpu-dev/roles", role
    )
    assert status == 422 and "namespaced rules cannot apply to non-resource URLs" in body["message"]


def review(server: KubernetesApiServer, who: SigningKey, attributes: dict[str, str]) -> Any:
    status, body = call(
        server,
        who,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {"spec": {"resourceAttributes": attributes}},
    )
    assert status == 201, body
    return body["status"]["allowed"]


def test_self_subject_access_reviews_answer_can_i(server: KubernetesApiServer):
    create_pod = {"namespace": "gpu-dev", "verb": "create", "resource": "pods"}
    assert review(server, LIFECYCLE, create_pod) is True
    assert review(server, READER, create_pod) is False
    assert review(server, ADMIN, {"verb": "*", "resource": "*", "group": "*"}) is True
    exec_ = {"namespace": "gpu-dev", "verb": "create", "resource": "pods", "subresource": "exec"}
    assert review(server, LIFECYCLE, exec_) is False
    reviews = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
    status, body = call(
        server, READER, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {}
    )
    assert status == 422 and "exactly one of" in body["message"]
    both = {"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/"}}
    status, body = call(server, READER, "POST", reviews, {"spec": both})
    assert status == 422 and "cannot be specified in combination" in body["message"]
    status, body = call(server, READER, "POST", reviews, [])  # refused as any body is
    assert status == 400 and "must be a JSON object" in body["message"]
    for bad in ({"spec": []}, {"spec": {"resourceAttributes": "pods"}},
                {"spec": {"nonResourceAttributes": {"path": 5, "verb": "get"}}}):  # fmt: skip
        status, body = call(server, READER, "POST", reviews, bad)
        assert (
            status == 400 and "cannot be handled as a SelfSubjectAccessReview" in (body["message"])
        ), bad
    assert call(server, READER, "GET", reviews)[0] == 403  # authorized before it is routed
    assert call(server, ADMIN, "GET", reviews)[0] == 405


def test_self_subject_rules_reviews_list_what_a_user_may_do(server: KubernetesApiServer):
    status, body = call(
        server,
        READER,
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        {"spec": {"namespace": "gpu-dev"}},
    )
    assert status == 201
    rules = body["status"]["resourceRules"]
    assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["nodes", "pods"]} in rules
    assert not any("create" in r["verbs"] and "pods" in r["resources"] for r in rules)


@pytest.mark.parametrize(
    ("rule", "attributes", "allowed"),
    [
        ({"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}, ("delete", "pods"), True),
        ({"apiGroups": ["*"], "resources": ["*"], "verbs": ["get"]}, ("get", "nodes"), True),
        ({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}, ("get", "pods/log"), False),
        # ResourceMatches knows `*`, the exact `pods/log` and `*/log`; `pods/*` is no wildcard
        (
            {"apiGroups": [""], "resources": ["pods/*"], "verbs": ["get"]},
            ("get", "pods/log"),
            False,
        ),
        ({"apiGroups": [""], "resources": ["*/log"], "verbs": ["get"]}, ("get", "pods/log"), True),
        ({"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}, ("get", "pods"), False),
        ({"apiGroups": ["apps"], "resources": ["pods"], "verbs": ["get"]}, ("get", "pods"), False),
        (
            {"apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"], "verbs": ["get"]},
            ("get", "pods", "b"),
            False,
        ),
        (
            {"apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"], "verbs": ["get"]},
            ("get", "pods", "a"),
            True,
        ),
    ],
)
def test_rules_match_as_the_rbac_authorizer_matches(
    rule: dict[str, Any], attributes: tuple[str, ...], allowed: bool
):
    verb, resource, *name = attributes
    resource, _, subresource = resource.partition("/")
    asked = Attributes(verb, resource, "", "gpu-dev", name[0] if name else "", subresource)
    assert rule_allows(rule, asked) is allowed


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/pods", {}, Attributes("list", "pods")),
        ("GET", "/api/v1/pods", {"watch": "true"}, Attributes("watch", "pods")),
        (
            "GET",
            "/api/v1/namespaces/a/pods/p/log",
            {},
            Attributes("get", "pods", "", "a", "p", "log"),
        ),
        (
            "POST",
            "/api/v1/namespaces/a/pods/p/binding",
            {},
            Attributes("create", "pods", "", "a", "p", "binding"),
        ),
        ("PUT", "/api/v1/namespaces/a", {}, Attributes("update", "namespaces", "", "a", "a")),
        (
            "DELETE",
            "/apis/networking.k8s.io/v1/namespaces/a/networkpolicies",
            {},
            Attributes("deletecollection", "networkpolicies", "networking.k8s.io", "a"),
        ),
        (
            "GET",
            "/apis/networking.k8s.io/v1",
            {},
            Attributes("get", path="/apis/networking.k8s.io/v1", resource_request=False),
        ),
        ("GET", "/version", {}, Attributes("get", path="/version", resource_request=False)),
    ],
)
def test_requests_become_authorizer_attributes_as_kube_apiserver_reads_them(
    method: str, path: str, query: dict[str, str], expected: Attributes
):
    assert request_attributes(method, path, query) == expected


# -- escalation prevention ---------------------------------------------------------------------
RBAC = "/apis/rbac.authorization.k8s.io/v1"


@pytest.fixture
def delegation() -> KubernetesApiServer:
    """A fresh cluster where DELEGATE may write roles and bindings everywhere but holds only
    `get pods` in gpu-dev, and ROOT holds cluster-admin through RBAC (no access policy)."""
    authenticator = authenticator_for(
        CLUSTER,
        (ADMIN, DELEGATE, ROOT),
        (
            AccessEntry(ADMIN.principal_arn, access_policies=(CLUSTER_ADMIN_POLICY,)),
            AccessEntry(DELEGATE.principal_arn, kubernetes_groups=("gpu-dev-delegates",)),
            AccessEntry(ROOT.principal_arn, kubernetes_groups=("gpu-dev-root",)),
        ),
    )
    server = KubernetesApiServer(ObjectStore(), authenticator)
    writer = {
        "metadata": {"name": "rbac-writer"},
        "rules": [
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["roles", "rolebindings", "clusterroles"],
                "verbs": ["create", "update", "patch"],
            }
        ],
    }
    reader = {
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    for path, obj in (
        (f"{RBAC}/clusterroles", writer),
        (f"{RBAC}/clusterrolebindings", binding("rbac-writer", "ClusterRole", "gpu-dev-delegates")),
        (f"{RBAC}/clusterrolebindings", binding("cluster-admin", "ClusterRole", "gpu-dev-root")),
        (f"{RBAC}/namespaces/gpu-dev/roles", reader),
        (
            f"{RBAC}/namespaces/gpu-dev/rolebindings",
            binding("pod-reader", "Role", "gpu-dev-delegates"),
        ),
    ):
        assert call(server, ADMIN, "POST", path, obj)[0] == 201
    return server


def binding(role: str, kind: str, group: str, name: str | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name or f"{role}-{group}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
    }


def role(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "rules": list(rules)}


GET_PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
DELETE_PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete", "get"]}


def test_a_role_may_grant_only_what_its_writer_holds_in_its_namespace(
    delegation: KubernetesApiServer,
):
    roles = f"{RBAC}/namespaces/gpu-dev/roles"
    assert call(delegation, DELEGATE, "POST", roles, role("mine", GET_PODS))[0] == 201
    status, body = call(delegation, DELEGATE, "POST", roles, role("more", DELETE_PODS))
    assert status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == (
        'roles.rbac.authorization.k8s.io "more" is forbidden: user '
        f'"arn:aws:iam::{ACCOUNT}:role/delegate" (groups=["gpu-dev-delegates" '
        '"system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}'
    )
    # what it holds in gpu-dev it does not hold in default
    status, body = call(
        delegation, DELEGATE, "POST", f"{RBAC}/namespaces/default/roles", role("mine", GET_PODS)
    )
    assert status == 403 and "not currently held" in body["message"]
    # updates are checked too, whether replaced or patched; nothing was written
    status, body = call(delegation, DELEGATE, "PUT", f"{roles}/mine", role("mine", DELETE_PODS))
    assert status == 403 and '"mine" is forbidden' in body["message"]
    patch = {"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}
    headers = {**auth_headers(CLUSTER, DELEGATE), "Content-Type": "application/merge-patch+json"}
    status, body = delegation.handle("PATCH", f"{roles}/mine", headers, json.dumps(patch).encode())
    assert status == 403 and 'Resources:["secrets"]' in body["message"]
    stored = call(delegation, ADMIN, "GET", f"{roles}/mine")[1]
    assert stored["rules"] == [GET_PODS]
    # cluster roles: the writer holds nothing at the cluster scope
    status, body = call(delegation, DELEGATE, "POST", f"{RBAC}/clusterroles", role("c", GET_PODS))
    assert status == 403 and body["message"].startswith(
        'clusterroles.rbac.authorization.k8s.io "c"'
    )


def test_the_escalate_verb_lets_a_writer_grant_what_it_does_not_hold(
    delegation: KubernetesApiServer,
):
    escalate = role(
        "escalate-roles",
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]},
    )
    assert call(delegation, ADMIN, "POST", f"{RBAC}/clusterroles", escalate)[0] == 201
    grant = binding("escalate-roles", "ClusterRole", "gpu-dev-delegates")
    path = f"{RBAC}/namespaces/gpu-dev/rolebindings"
    assert call(delegation, ADMIN, "POST", path, grant)[0] == 201
    roles = f"{RBAC}/namespaces/gpu-dev/roles"
    assert call(delegation, DELEGATE, "POST", roles, role("more", DELETE_PODS))[0] == 201
    # in gpu-dev only
    status, _ = call(
        delegation, DELEGATE, "POST", f"{RBAC}/namespaces/default/roles", role("x", DELETE_PODS)
    )
    assert status == 403


def test_a_binding_may_grant_only_a_role_its_writer_holds_or_may_bind(
    delegation: KubernetesApiServer,
):
    bindings = f"{RBAC}/namespaces/gpu-dev/rolebindings"
    held = binding("pod-reader", "Role", "someone-else")
    assert call(delegation, DELEGATE, "POST", bindings, held)[0] == 201
    admin = binding("cluster-admin", "ClusterRole", "gpu-dev-delegates", "admin-for-me")
    status, body = call(delegation, DELEGATE, "POST", bindings, admin)
    assert status == 403
    assert body["message"].startswith(
        'rolebindings.rbac.authorization.k8s.io "admin-for-me" is forbidden: user '
    )
    assert (
        'not currently held:\n{APIGroups:["*"], Resources:["*"], Verbs:["*"]}' in (body["message"])
    )
    # the pod-reader Role exists in gpu-dev only; a role that does not exist is 404
    status, body = call(
        delegation, DELEGATE, "POST", f"{RBAC}/namespaces/default/rolebindings", held
    )
    assert status == 404 and body["message"] == 'roles "pod-reader" not found'
    # `bind` on clusterroles, its resourceNames honoured
    for names, expected in ((["view"], 403), (["cluster-admin"], 201)):
        may_bind = role(
            f"bind-{names[0]}",
            {
                "apiGroups": ["rbac.authorization.k8s.io"],
                "resources": ["clusterroles"],
                "resourceNames": names,
                "verbs": ["bind"],
            },
        )
        assert call(delegation, ADMIN, "POST", f"{RBAC}/clusterroles", may_bind)[0] == 201
        grant = binding(f"bind-{names[0]}", "ClusterRole", "gpu-dev-delegates")
        assert call(delegation, ADMIN, "POST", bindings, grant)[0] == 201
        assert call(delegation, DELEGATE, "POST", bindings, admin)[0] == expected


def test_cluster_admins_grant_anything(delegation: KubernetesApiServer):
    anything = role("anything", {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]})
    for who in (ADMIN, ROOT):  # the EKS access policy; cluster-admin through RBAC
        anything["metadata"]["name"] = f"anything-{who.access_key_id}"
        assert call(delegation, who, "POST", f"{RBAC}/clusterroles", anything)[0] == 201
        grant = binding("cluster-admin", "ClusterRole", "x", f"admin-{who.access_key_id}")
        assert call(delegation, who, "POST", f"{RBAC}/clusterrolebindings", grant)[0] == 201


def test_a_service_account_subject_without_a_namespace_is_in_the_bindings():
    store = ObjectStore()
    store.create("roles", "gpu-dev", role("pod-reader", GET_PODS))
    store.create(
        "rolebindings",
        "gpu-dev",
        {
            "metadata": {"name": "runner"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "pod-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "runner"}],
        },
    )
    authorizer = Authorizer(store)
    get_pod = Attributes("get", "pods", "", "gpu-dev", "p")
    assert authorizer.allows(UserInfo("system:serviceaccount:gpu-dev:runner"), get_pod)
    assert not authorizer.allows(UserInfo("system:serviceaccount:default:runner"), get_pod)
    assert not authorizer.allows(UserInfo("system:serviceaccount::runner"), get_pod)


NAMED = {"apiGroups": [""], "resources": ["pods"], "resourceNames": ["p"], "verbs": ["get"]}


@pytest.mark.parametrize(
    ("held", "granted", "uncovered"),
    [
        ([GET_PODS], [NAMED], 0),  # no resourceNames: every name
        ([NAMED], [GET_PODS], 1),  # a named rule does not cover every name
        ([NAMED], [{**NAMED, "resourceNames": ["p", "q"]}], 1),
        (
            [{"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["*"]}],
            [{"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["patch"]}],
            0,
        ),
        ([GET_PODS], [{"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]}], 1),
        (
            [{"nonResourceURLs": ["/logs/*"], "verbs": ["get"]}],
            [{"nonResourceURLs": ["/logs/a", "/metrics"], "verbs": ["get"]}],
            1,
        ),
        ([{"nonResourceURLs": ["*"], "verbs": ["*"]}], [GET_PODS], 1),
        ([DELETE_PODS], [{"apiGroups": ["", "apps"], "resources": ["pods"], "verbs": ["get"]}], 1),
    ],
)
def test_held_rules_cover_granted_ones_as_kube_apiservers_covers(
    held: list[dict[str, Any]], granted: list[dict[str, Any]], uncovered: int
):
    assert len(missing(held, granted)) == uncovered


def test_a_rule_whose_lists_are_strings_is_refused_created_or_json_patched(
    delegation: KubernetesApiServer,
):
    """`verbs: "*"` (a string, not a list) is held by no escalation check and allows
    everything to the authorizer (`"*" in "*"`): kube-apiserver cannot decode it, 400 in a
    body; a JSON patch's body is operations, so the patched object is decoded: 422."""
    roles = f"{RBAC}/namespaces/gpu-dev/roles"
    strings = {"apiGroups": "*", "resources": "*", "verbs": "*"}
    status, body = call(delegation, DELEGATE, "POST", roles, role("everything", strings))
    assert status == 400 and "rules[0].verbs: expected a list" in body["message"], body
    assert call(delegation, ADMIN, "GET", f"{roles}/everything")[0] == 404
    assert call(delegation, DELEGATE, "POST", roles, role("mine", GET_PODS))[0] == 201
    patch = [
        {"op": "replace", "path": f"/rules/0/{field}", "value": "*"}
        for field in ("apiGroups", "resources", "verbs")
    ]
    headers = {**auth_headers(CLUSTER, DELEGATE), "Content-Type": "application/json-patch+json"}
    status, body = delegation.handle("PATCH", f"{roles}/mine", headers, json.dumps(patch).encode())
    assert status == 422 and body["reason"] == "Invalid", body
    assert "rules[0].verbs: expected a list" in body["message"]
    assert call(delegation, ADMIN, "GET", f"{roles}/mine")[1]["rules"] == [GET_PODS]
    # a well-typed JSON patch is still checked for escalation and applied when held
    held = [{"op": "replace", "path": "/rules/0/verbs", "value": ["get"]}]
    status, _ = delegation.handle("PATCH", f"{roles}/mine", headers, json.dumps(held).encode())
    assert status == 200
    more = [{"op": "replace", "path": "/rules/0/verbs", "value": ["delete"]}]
    status, body = delegation.handle("PATCH", f"{roles}/mine", headers, json.dumps(more).encode())
    assert status == 403 and "not currently held" in body["message"]


def test_the_lifecycle_may_start_a_privileged_docker_pod_in_gpu_dev_docker_only(
    server: KubernetesApiServer,
):
    """`reserve --docker`'s sidecar (cluster/pod_docker.py): RBAC lets the lifecycle create
    pods in gpu-dev-docker, and Pod Security admits a privileged container there only."""
    privileged = pod("dind")
    privileged["spec"]["containers"].append(
        {"name": "docker", "image": "docker:27-dind", "securityContext": {"privileged": True}}
    )
    status, body = call(server, LIFECYCLE, "POST", "/api/v1/namespaces/gpu-dev/pods", privileged)
    assert status == 403, body
    assert body["message"] == (
        'pods "dind" is forbidden: violates PodSecurity "baseline:latest": privileged '
        '(container "docker" must not set securityContext.privileged=true)'
    )
    path = "/api/v1/namespaces/gpu-dev-docker/pods"
    status, body = call(server, LIFECYCLE, "POST", path, privileged)
    assert status == 201, body
    assert call(server, LIFECYCLE, "DELETE", f"{path}/dind")[0] == 200
