"""What starting the Kubernetes stand-in and its simulated cluster needs from the rest of
the local cloud: the client imported once, the node shapes of the GPU catalogue, the
cluster admin's identity (its role, and a token to apply deploy/kubernetes/ with), and moto's
EKS cluster pointed at the stand-in (endpoint and CA, as DescribeCluster answers for EKS)."""

from __future__ import annotations

import base64
import configparser
import importlib
import logging
from pathlib import Path

import boto3
import psycopg

from gpudev.cluster.eks import eks_bearer_token
from gpudev.repositories import GpuTypesRepository
from localcloud.aws import SSO_PROFILE, SSO_ROLE_NAME, SSO_ROLE_PATH
from localcloud.kubernetes.cluster import NodeShape
from localcloud.lambdas import ACCOUNT_ID

# The local operator: sessions of carol's SSO role (ADMIN_ROLES; the cluster's admin entry).
ADMIN_ROLE_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role{SSO_ROLE_PATH}{SSO_ROLE_NAME}"
log = logging.getLogger("localcloud.kubernetes")


def import_kubernetes_client() -> None:
    """Import the Kubernetes client once, here. Our functions import it lazily, and in AWS
    each runs in its own process; here they share one, and the client's lazy submodule
    imports deadlock when two threads take the first import at once."""
    for module in (
        "kubernetes.client",
        "kubernetes.client.api_client",
        "kubernetes.client.configuration",
        "kubernetes.client.exceptions",
        "kubernetes.client.api.core_v1_api",
    ):
        importlib.import_module(module)


def node_shapes(database_url: str) -> dict[str, NodeShape]:
    """One node shape per active GPU type of the catalogue, by GPU type."""
    with psycopg.connect(database_url) as conn:
        catalogue = GpuTypesRepository(conn).list_active()
    # GPU node groups in public subnets (users SSH to the node's external address), the
    # CPU ones in private subnets (internal address only): the CLI shows both paths.
    return {
        t.gpu_type: NodeShape(
            t.gpu_type,
            t.instance_type,
            t.max_gpus,
            t.cpus,
            t.memory_gb,
            public_subnet=not t.is_cpu_only,
            efa=t.efa_interfaces,
        )
        for t in catalogue
    }


def admin_token(credentials_file: Path, cluster_name: str, region: str) -> str:
    """An EKS token of the admin's session (carol's profile), as `aws eks get-token`."""
    profiles = configparser.ConfigParser()
    profiles.read(credentials_file)
    admin = profiles[SSO_PROFILE]
    session = boto3.Session(
        aws_access_key_id=admin["aws_access_key_id"],
        aws_secret_access_key=admin["aws_secret_access_key"],
        aws_session_token=admin["aws_session_token"],
    )
    return eks_bearer_token(session, cluster_name, region)


def log_refused_token(reason: str) -> None:
    """EKS logs why it refused a token in its authenticator log; the caller sees only 401."""
    log.info("kubernetes api: 401 Unauthorized: %s", reason)


def point_cluster_at(
    cluster_name: str, account_id: str, region: str, endpoint: str, ca_pem: bytes
) -> None:
    """moto invents an endpoint and a random CA for a new cluster; ours are the stand-in's,
    so a client built from DescribeCluster (the layer's `eks.py`, kubectl's kubeconfig)
    reaches the stand-in over HTTPS exactly as it reaches EKS. moto has no API to set them:
    its in-process backend is changed (the seam; tests/e2e/test_kubectl.py shows it works)."""
    from moto.eks.models import eks_backends

    cluster = eks_backends[account_id][region].clusters[cluster_name]
    cluster.endpoint = endpoint
    cluster.certificate_authority = {"data": base64.b64encode(ca_pem).decode()}
