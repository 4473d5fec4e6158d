"""The availability updater's Kubernetes rights with the pre-puller (deploy/kubernetes/
rbac.yaml and prepuller/rbac.yaml, applied by an admin to the stand-in, which enforces RBAC
as kube-apiserver does): its group reads nodes and pods as the readers do, and may get and
patch the pre-puller's DaemonSet and nothing else: not list it, not delete it, not create
another, not touch another DaemonSet, not patch pods."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cdk_app.declaration import AVAILABILITY_UPDATER
from localcloud.cluster_access import PREPULLER_MANIFESTS, apply, manifests
from localcloud.kubernetes.access_entries import CLUSTER_ADMIN_POLICY, AccessEntry
from localcloud.kubernetes.server import KubernetesApiServer
from localcloud.kubernetes.store import ObjectStore
from localcloud.sigv4 import SigningKey
from tests.support.kubernetes import auth_headers, authenticator_for, eks_token

CLUSTER = "gpudev-local"
ACCOUNT = "111122223333"
SETS = "/apis/apps/v1/namespaces/gpu-dev-prepuller/daemonsets"
OURS = f"{SETS}/gpu-dev-prepuller"


def key(name: str) -> SigningKey:
    return SigningKey(
        f"AKIA{name.upper():0<16}", f"{name}-secret", f"arn:aws:iam::{ACCOUNT}:role/{name}", "", ""
    )


ADMIN, UPDATER, READER = key("admin"), key("updater"), key("reader")
HEADERS: dict[SigningKey, dict[str, str]] = {}


@pytest.fixture(scope="module")
def server() -> KubernetesApiServer:
    authenticator = authenticator_for(
        CLUSTER,
        (ADMIN, UPDATER, READER),
        (
            AccessEntry(ADMIN.principal_arn, access_policies=(CLUSTER_ADMIN_POLICY,)),
            AccessEntry(
                UPDATER.principal_arn, kubernetes_groups=(AVAILABILITY_UPDATER.kubernetes_group,)
            ),
            AccessEntry(READER.principal_arn, kubernetes_groups=("gpu-dev-readers",)),
        ),
    )
    server = KubernetesApiServer(ObjectStore(), authenticator)
    admin = eks_token(CLUSTER, ADMIN)
    apply(server.handle, admin, manifests())
    apply(server.handle, admin, manifests(names=PREPULLER_MANIFESTS))
    return server


def call(
    server: KubernetesApiServer,
    who: SigningKey,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
) -> tuple[int, Any]:
    if who not in HEADERS:
        HEADERS[who] = auth_headers(CLUSTER, who)
    headers = {**HEADERS[who], "Content-Type": content_type}
    raw = json.dumps(body).encode() if body is not None else b""
    return server.handle(method, path, headers, raw)


def test_the_updater_has_a_group_of_its_own():
    assert AVAILABILITY_UPDATER.kubernetes_group == "gpu-dev-availability"


def test_the_updater_may_get_and_patch_the_pre_puller_and_read_nodes_and_pods(server):
    assert call(server, UPDATER, "GET", OURS)[0] == 200
    patch = {"spec": {"template": {"metadata": {"annotations": {"a": "b"}}}}}
    status, body = call(server, UPDATER, "PATCH", OURS, patch, "application/merge-patch+json")
    assert status == 200, body
    assert body["spec"]["template"]["metadata"]["annotations"] == {"a": "b"}
    assert call(server, UPDATER, "GET", "/api/v1/nodes")[0] == 200
    assert call(server, UPDATER, "GET", "/api/v1/pods")[0] == 200


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", SETS, None),  # no list: it could read every DaemonSet there
        ("DELETE", OURS, None),
        ("PUT", OURS, {"metadata": {"name": "gpu-dev-prepuller"}}),
        ("GET", f"{SETS}/aws-node", None),
        ("PATCH", f"{SETS}/aws-node", {"metadata": {"labels": {"a": "b"}}}),
        ("POST", SETS, {"metadata": {"name": "another"}}),
        ("GET", "/apis/apps/v1/namespaces/gpu-dev/daemonsets/gpu-dev-prepuller", None),
        ("PATCH", "/api/v1/namespaces/gpu-dev/pods/p", {"metadata": {"labels": {"a": "b"}}}),
    ],
)
def test_anything_else_is_forbidden_to_the_updater(server, method, path, body):
    status, answer = call(server, UPDATER, method, path, body, "application/merge-patch+json")
    assert status == 403, answer
    assert answer["reason"] == "Forbidden"


def test_the_allocators_readers_may_not_touch_the_pre_puller(server):
    assert call(server, READER, "GET", OURS)[0] == 403
    status, _ = call(
        server, READER, "PATCH", OURS, {"metadata": {}}, "application/merge-patch+json"
    )
    assert status == 403
