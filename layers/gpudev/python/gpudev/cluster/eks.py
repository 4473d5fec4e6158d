"""Kubernetes API clients for EKS, built as AWS builds them and without kubeconfig.

The endpoint and CA come from `eks:DescribeCluster`; the bearer token is an STS
GetCallerIdentity request presigned with SigV4 and the signed header `x-k8s-aws-id:
<cluster>`, base64url-encoded behind `k8s-aws-v1.` (what `aws eks get-token` prints). It is
valid for 15 minutes; clients refresh it after 10. `load_kube_config` is never used: it
mutates process-global state. Every request is bounded by a timeout.
"""

from __future__ import annotations

import base64
import functools
import tempfile
import time
from collections.abc import Callable
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


class RefreshingToken:
    """The bearer token, issued on first use and again once it is `refresh_after` old.

    "Never issued" is None, not a time: a fresh Lambda microVM (or a just-booted machine)
    has a monotonic clock near zero, and a sentinel compared against it would never issue.
    """

    def __init__(
        self,
        issue: Callable[[], str],
        clock: Callable[[], float] = time.monotonic,
        refresh_after: float = TOKEN_REFRESH_SECONDS,
    ):
        self._issue = issue
        self._clock = clock
        self._refresh_after = refresh_after
        self._token: str | None = None
        self._issued_at = 0.0

    def current(self) -> str:
        now = self._clock()
        if self._token is None or now - self._issued_at >= self._refresh_after:
            self._token = self._issue()
            self._issued_at = now
        return self._token


@functools.cache
def _timed_api_client_class() -> type[ApiClient]:
    """ApiClient whose every call gets a (connect, read) timeout unless it names its own: a
    hung API server fails the call in seconds (a transient error the state machine
    retries) instead of holding the Lambda until its own timeout. Built on first use so
    importing this module does not import the Kubernetes client."""
    from kubernetes.client import ApiClient

    class TimedApiClient(ApiClient):
        def __init__(self, configuration: Configuration, timeout: tuple[float, float]):
            super().__init__(configuration)
            self.default_timeout = timeout

        def call_api(
            self,
            method: Any,
            url: Any,
            header_params: Any = None,
            body: Any = None,
            post_params: Any = None,
            _request_timeout: Any = None,
        ) -> Any:
            return super().call_api(
                method,
                url,
                header_params,
                body,
                post_params,
                _request_timeout=_request_timeout or self.default_timeout,
            )

    return TimedApiClient


def kubernetes_api_client(
    aws: AwsClients,
    settings: ClusterSettings,
    clock: Callable[[], float] = time.monotonic,
) -> ApiClient:
    """An ApiClient for the cluster, refreshing its token before it expires and bounding
    every request by `settings.kubernetes_timeout_seconds`."""
    from kubernetes.client import Configuration

    cluster: dict[str, Any] = aws.eks.describe_cluster(name=settings.eks_cluster_name)["cluster"]
    endpoint = cluster["endpoint"]
    configuration = Configuration()
    configuration.host = endpoint
    configuration.retries = 1  # one quick retry of a dropped connection; the rest is ours
    if endpoint.startswith("https://"):
        ca = tempfile.NamedTemporaryFile(prefix="eks-ca-", suffix=".pem", delete=False)  # noqa: SIM115
        ca.write(base64.b64decode(cluster["certificateAuthority"]["data"]))
        ca.close()
        configuration.ssl_ca_cert = ca.name
    token = RefreshingToken(
        lambda: eks_bearer_token(aws.session, settings.eks_cluster_name, aws.region), clock
    )

    def refresh(config: Configuration) -> None:
        config.api_key = {"authorization": token.current()}
        config.api_key_prefix = {"authorization": "Bearer"}

    refresh(configuration)
    configuration.refresh_api_key_hook = refresh  # type: ignore[assignment]
    timeout = settings.kubernetes_timeout_seconds
    return _timed_api_client_class()(configuration, (min(timeout, 3.0), timeout))


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
