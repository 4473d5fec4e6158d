"""The local cluster's access as EKS's: the functions' roles get exactly what
deploy/kubernetes/rbac.yaml grants their declared group (a missing grant is a 403 here
first), a principal without an access entry is 401, and the admin's `kubectl auth can-i`
is answered by a SelfSubjectAccessReview."""

from __future__ import annotations

import boto3
import pytest

from cdk_app.declaration import AVAILABILITY_UPDATER, RESERVATION_TASKS
from localcloud.cluster_access import function_role_name
from localcloud.lambdas import ACCOUNT_ID
from localcloud.stack import REGION, LocalCloud
from tests.e2e.conftest import eks_api_client, eks_api_client_as

NAMESPACE = "gpu-dev"
POD = {
    "metadata": {"name": "not-mine-to-make"},
    "spec": {"containers": [{"name": "main", "image": "busybox"}]},
}


def function_session(cloud: LocalCloud, deployed_name: str) -> boto3.Session:
    """A session of the function's own role, as Lambda gives its execution environment."""
    assert cloud.aws is not None
    credentials = cloud.aws.client("sts").assume_role(
        RoleArn=f"arn:aws:iam::{ACCOUNT_ID}:role/{function_role_name(deployed_name)}",
        RoleSessionName=deployed_name,
    )["Credentials"]
    return boto3.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=REGION,
    )


def test_the_availability_updater_reads_pods_but_cannot_create_one(local_cloud: LocalCloud):
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    session = function_session(local_cloud, AVAILABILITY_UPDATER.deployed_name)
    with eks_api_client_as(local_cloud, session) as api_client:
        core = client.CoreV1Api(api_client)
        core.list_pod_for_all_namespaces()
        core.list_node()
        with pytest.raises(ApiException) as refused:
            core.create_namespaced_pod(NAMESPACE, POD)
    assert refused.value.status == 403
    role = function_role_name(AVAILABILITY_UPDATER.deployed_name)
    user = f"arn:aws:sts::{ACCOUNT_ID}:assumed-role/{role}/{AVAILABILITY_UPDATER.deployed_name}"
    assert (
        f'pods is forbidden: User \\"{user}\\" cannot create resource \\"pods\\" in API group '
        f'\\"\\" in the namespace \\"{NAMESPACE}\\"' in refused.value.body
    )


def test_the_reservation_tasks_may_create_pods_in_their_namespaces_only(local_cloud: LocalCloud):
    from kubernetes import client

    session = function_session(local_cloud, RESERVATION_TASKS.deployed_name)
    with eks_api_client_as(local_cloud, session) as api_client:
        reviews = client.AuthorizationV1Api(api_client)

        def can_i(verb: str, resource: str, namespace: str, subresource: str = "") -> bool:
            review = client.V1SelfSubjectAccessReview(
                spec=client.V1SelfSubjectAccessReviewSpec(
                    resource_attributes=client.V1ResourceAttributes(
                        verb=verb, resource=resource, namespace=namespace, subresource=subresource
                    )
                )
            )
            return bool(reviews.create_self_subject_access_review(review).status.allowed)

        assert can_i("create", "pods", "gpu-dev")
        assert can_i("delete", "secrets", "gpu-dev-profiling")
        assert can_i("create", "pods", "gpu-dev-docker")  # reserve --docker
        assert can_i("delete", "configmaps", "gpu-dev-docker")
        assert not can_i("create", "pods", "gpu-dev-docker", subresource="exec")
        assert not can_i("create", "pods", "default")
        assert not can_i("create", "pods", "gpu-dev", subresource="exec")


def test_a_principal_without_an_access_entry_is_unauthorized(local_cloud: LocalCloud):
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    with (
        eks_api_client(local_cloud, profile="alice") as api_client,
        pytest.raises(ApiException) as refused,
    ):
        client.CoreV1Api(api_client).list_namespaced_pod(NAMESPACE)
    assert refused.value.status == 401


def test_the_admin_may_do_anything(local_cloud: LocalCloud):
    from kubernetes import client

    with eks_api_client(local_cloud) as api_client:
        review = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(
                    verb="*", resource="*", group="*", namespace="kube-system"
                )
            )
        )
        answer = client.AuthorizationV1Api(api_client).create_self_subject_access_review(review)
    assert answer.status.allowed
