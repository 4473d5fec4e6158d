"""A bare Kubernetes stand-in (no local cloud around it) and official clients for it.

The server authenticates as EKS does, so its callers sign real tokens: one test principal
whose key the server's authenticator knows, with an admin access entry (the bare servers
serve tests of our cluster code, not of RBAC; tests/integration/test_stand_in_rbac.py
covers that)."""

from __future__ import annotations

from typing import Any

from localcloud.kubernetes.access_entries import (
    CLUSTER_ADMIN_POLICY,
    AccessEntries,
    AccessEntry,
)
from localcloud.kubernetes.authentication import Authenticator
from localcloud.kubernetes.container_logs import ContainerLogs
from localcloud.kubernetes.server import KubernetesApiServer
from localcloud.kubernetes.store import ObjectStore
from localcloud.sigv4 import SigningKey

REGION = "us-east-2"
TEST_KEY = SigningKey(
    "AKIASTANDINTEST00000",
    "stand-in-test-secret-key",
    "arn:aws:iam::111122223333:user/stand-in-test",
    "111122223333",
    "AIDASTANDINTEST00000",
)


def eks_token(cluster_name: str, key: SigningKey = TEST_KEY) -> str:
    """What `aws eks get-token` prints for `key` (our functions' own token code)."""
    import boto3

    from gpudev.cluster.eks import eks_bearer_token

    session = boto3.Session(
        aws_access_key_id=key.access_key_id,
        aws_secret_access_key=key.secret_access_key,
        aws_session_token=key.session_token,
    )
    return eks_bearer_token(session, cluster_name, REGION)


def auth_headers(cluster_name: str, key: SigningKey = TEST_KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {eks_token(cluster_name, key)}"}


def authenticator_for(
    cluster_name: str,
    keys: tuple[SigningKey, ...] = (TEST_KEY,),
    entries: tuple[AccessEntry, ...] = (
        AccessEntry(TEST_KEY.principal_arn, access_policies=(CLUSTER_ADMIN_POLICY,)),
    ),
) -> Authenticator:
    by_id = {key.access_key_id: key for key in keys}
    return Authenticator(cluster_name, by_id.get, AccessEntries.of(entries))


def stand_in_server(
    store: ObjectStore, cluster_name: str = "test", container_logs: ContainerLogs | None = None
) -> KubernetesApiServer:
    """A stand-in whose one user (TEST_KEY) is a cluster admin (call `start()` to serve)."""
    return KubernetesApiServer(
        store, authenticator_for(cluster_name), container_logs=container_logs
    )


def stand_in_api_client(server: KubernetesApiServer, key: SigningKey = TEST_KEY) -> Any:
    """A `kubernetes.client.ApiClient` for the started `server` (close it after)."""
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = server.url
    configuration.api_key = {"authorization": eks_token(server.cluster_name, key)}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(configuration)
