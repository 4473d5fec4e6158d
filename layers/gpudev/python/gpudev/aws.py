"""The one place AWS clients are made.

`AwsClients` takes a boto3 session (injectable: tests hand in one pointed at moto, or
wrap a client in a botocore Stubber) and honours the endpoint override the local cloud
sets. Clients are created on first use and cached per instance; nothing is created at
import time.
"""

from __future__ import annotations

from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

from botocore.config import Config

if TYPE_CHECKING:
    import boto3

_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5)


class AwsClients:
    def __init__(
        self,
        session: boto3.Session | None = None,
        region: str | None = None,
        endpoint_url: str | None = None,
    ):
        if session is None or region is None:
            from gpudev.settings import aws_settings

            settings = aws_settings()
            region = region or settings.aws_region
            endpoint_url = endpoint_url or settings.aws_endpoint_url
        if session is None:
            import boto3

            session = boto3.Session(region_name=region)
        self.session = session
        self.region = region
        self.endpoint_url = endpoint_url

    def client(self, service: str) -> Any:
        return self.session.client(
            service,  # type: ignore[call-overload]
            region_name=self.region,
            endpoint_url=self.endpoint_url,
            config=_CLIENT_CONFIG,
        )

    @cached_property
    def sqs(self) -> Any:
        return self.client("sqs")

    @cached_property
    def stepfunctions(self) -> Any:
        return self.client("stepfunctions")

    @cached_property
    def ec2(self) -> Any:
        return self.client("ec2")

    @cached_property
    def autoscaling(self) -> Any:
        return self.client("autoscaling")

    @cached_property
    def sts(self) -> Any:
        return self.client("sts")

    @cached_property
    def eks(self) -> Any:
        return self.client("eks")

    @cached_property
    def secretsmanager(self) -> Any:
        return self.client("secretsmanager")

    @cached_property
    def rds(self) -> Any:
        """Only for `generate_db_auth_token`, which signs locally (no request is made)."""
        return self.client("rds")


@cache
def aws_clients() -> AwsClients:
    """The default clients of this execution environment (the standard credential chain)."""
    return AwsClients()
