"""What starting the Kubernetes stand-in and its simulated cluster needs from the rest of
the local cloud: the client imported once, the node shapes of the GPU catalogue, the
principal behind an access key (the stand-in's authentication), and moto's EKS cluster
pointed at the stand-in (endpoint and CA, as DescribeCluster answers for EKS)."""

from __future__ import annotations

import base64
import importlib

import psycopg

from gpudev.repositories import GpuTypesRepository
from localcloud.aws import signing_key
from localcloud.kubernetes.cluster import NodeShape


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
        )
        for t in catalogue
    }


def principal_of_key(access_key_id: str) -> str | None:
    key = signing_key(access_key_id)
    return key.principal_arn if key else None


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
