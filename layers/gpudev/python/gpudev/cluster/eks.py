"""Kubernetes API clients for EKS, built as AWS builds them and without kubeconfig.

The endpoint and CA come from `eks:DescribeCluster`; the bearer token is an STS
GetCallerIdentity request presigned with SigV4 and the signed header `x-k8s-aws-id:
<cluster>`, base64url-encoded behind `k8s-aws-v1.` (what `aws eks get-token` prints). It is
valid for 15 minutes; clients refresh it after 10. `load_kube_config` is never used: it
mutates process-global state.
"""

from __future__ import annotations

import base64
import tempfile
import time
from typing import TYPE_CHECKING, Any

from botocore.signers import RequestSigner

if TYPE_CHECKING:
    import boto3
    from kubernetes.client import ApiClient, Configuration

    from gpudev.aws import AwsClients
    from gpudev.settings import ClusterSettings

TOKEN_PREFIX = "k8s-aws-v1."
TOKEN_REFRESH_SECONDS = 600


def eks_bearer_token(session: boto3.Session, cluster_name: str, region: str) -> str:
    credentials = session.get_credentials()
    if credentials is None:
        raise RuntimeError("no AWS credentials to sign the EKS token with")
    sts = session.client("sts", region_name=region)
    signer = RequestSigner(
        sts.meta.service_model.service_id,
        region,
        "sts",
        "v4",
        credentials,
        session.events,
    )
    url = signer.generate_presigned_url(
        {
            "method": "GET",
            "url": f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            "headers": {"x-k8s-aws-id": cluster_name},
            "context": {},
        },
        region_name=region,
        expires_in=60,
        operation_name="",
    )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def kubernetes_api_client(aws: AwsClients, settings: ClusterSettings) -> ApiClient:
    """An ApiClient for the cluster, refreshing its token before it expires."""
    from kubernetes.client import ApiClient, Configuration

    cluster: dict[str, Any] = aws.eks.describe_cluster(name=settings.eks_cluster_name)["cluster"]
    endpoint = settings.kubernetes_endpoint_url or cluster["endpoint"]
    configuration = Configuration()
    configuration.host = endpoint
    if endpoint.startswith("https://"):
        ca = tempfile.NamedTemporaryFile(prefix="eks-ca-", suffix=".pem", delete=False)  # noqa: SIM115
        ca.write(base64.b64decode(cluster["certificateAuthority"]["data"]))
        ca.close()
        configuration.ssl_ca_cert = ca.name
    issued_at = 0.0

    def refresh(config: Configuration) -> None:
        nonlocal issued_at
        if time.monotonic() - issued_at > TOKEN_REFRESH_SECONDS:
            token = eks_bearer_token(aws.session, settings.eks_cluster_name, aws.region)
            config.api_key = {"authorization": token}
            config.api_key_prefix = {"authorization": "Bearer"}
            issued_at = time.monotonic()

    refresh(configuration)
    configuration.refresh_api_key_hook = refresh  # type: ignore[assignment]
    return ApiClient(configuration)


_cached_client: ApiClient | None = None


def cluster_api_client() -> ApiClient:
    """This execution environment's client for the configured cluster (built once)."""
    global _cached_client
    if _cached_client is None:
        from gpudev.aws import aws_clients
        from gpudev.settings import cluster_settings

        _cached_client = kubernetes_api_client(aws_clients(), cluster_settings())
    return _cached_client


def reset_cluster_api_client() -> None:
    """Forget the cached client (the local cloud re-points the process between runs)."""
    global _cached_client
    _cached_client = None
