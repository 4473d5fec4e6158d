"""The local cluster's access entries come from the deployment declaration, as the CDK
stack's do, and the operator's apply of deploy/kubernetes/ stops on any refusal."""

from __future__ import annotations

import pytest

from cdk_app.declaration import ALLOCATOR, AVAILABILITY_UPDATER, DEPLOYMENT, RESERVATION_TASKS
from localcloud.cluster_access import access_entries, apply, manifests, object_path
from localcloud.kubernetes.access_entries import AccessEntry
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.server import KubernetesApiServer
from localcloud.kubernetes.store import ObjectStore
from tests.support.kubernetes import TEST_KEY, authenticator_for, eks_token

ACCOUNT = "123456789012"
ROLES = {
    spec.deployed_name: f"arn:aws:iam::{ACCOUNT}:role/{spec.deployed_name}-role"
    for spec in DEPLOYMENT.functions
    if spec.uses_cluster
}
SHARED = f"arn:aws:iam::{ACCOUNT}:user/gpudev-functions"
ADMIN = f"arn:aws:iam::{ACCOUNT}:role/aws-reserved/sso.amazonaws.com/Admins"
TABLE = access_entries(DEPLOYMENT, ROLES, SHARED, [ADMIN])


def session_of(spec_name: str) -> str:
    return f"arn:aws:sts::{ACCOUNT}:assumed-role/{spec_name}-role/{spec_name}"


def test_each_cluster_using_function_is_in_its_declared_group_only():
    for spec in (ALLOCATOR, AVAILABILITY_UPDATER, RESERVATION_TASKS):
        user = TABLE.user(session_of(spec.deployed_name))
        assert user is not None
        assert user.groups == (spec.kubernetes_group, "system:authenticated")
        assert not user.cluster_admin


def test_the_shared_in_process_identity_has_the_union_of_the_groups():
    user = TABLE.user(SHARED)
    assert user is not None and user.username == SHARED
    assert user.groups == (
        "gpu-dev-availability",
        "gpu-dev-lifecycle",
        "gpu-dev-readers",
        "system:authenticated",
    )


def test_the_admin_role_has_the_cluster_admin_policy_and_others_no_entry():
    admin = TABLE.user(f"arn:aws:sts::{ACCOUNT}:assumed-role/Admins/carol@example.com")
    assert admin is not None and admin.cluster_admin
    assert TABLE.user(f"arn:aws:iam::{ACCOUNT}:user/alice") is None


def test_the_manifests_are_applied_namespaces_first_each_to_its_collection():
    documents = manifests()
    assert documents[0]["kind"] == "Namespace"
    paths = {object_path(d) for d in documents}
    assert "/api/v1/namespaces" in paths
    assert "/apis/rbac.authorization.k8s.io/v1/clusterroles" in paths
    assert "/apis/rbac.authorization.k8s.io/v1/namespaces/gpu-dev/rolebindings" in paths
    assert "/apis/networking.k8s.io/v1/namespaces/gpu-dev-profiling/networkpolicies" in paths


def test_applying_without_the_grants_stops_with_the_api_servers_refusal():
    server = KubernetesApiServer(
        ObjectStore(),
        authenticator_for(
            "c", entries=(AccessEntry(TEST_KEY.principal_arn, kubernetes_groups=("nobody",)),)
        ),
    )
    with pytest.raises(ApiError) as refused:
        apply(server.handle, eks_token("c"), manifests())
    assert (
        refused.value.code == 403 and 'cannot create resource "namespaces"' in refused.value.message
    )
