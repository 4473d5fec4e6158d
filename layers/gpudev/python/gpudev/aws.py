"""The one place AWS clients are made.

`AwsClients` takes a boto3 session (injectable: tests hand in one with other credentials,
or wrap a client in a botocore Stubber). botocore finds each service's endpoint itself:
AWS's, or the local cloud's overrides (`AWS_ENDPOINT_URL`, and `AWS_ENDPOINT_URL_SQS` for
its SQS, which has an endpoint of its own). Clients are
created on first use and cached per instance; nothing is created at import time.
"""

from __future__ import annotations

import threading
from functools import cache
from typing import TYPE_CHECKING, Any

from botocore.config import Config

if TYPE_CHECKING:
    import boto3

_CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5)
# What one service needs besides: S3 presigns with SigV4, the only version that signs the
# Content-Length (botocore may otherwise presign with SigV2, and a presigned upload of a
# build context would then take any size: gpudev/image_builds/).
_SERVICE_CONFIG = {"s3": Config(signature_version="s3v4")}


class _Client:
    """An `AwsClients` attribute: the client of the AWS service it is named after, made on
    first use and then kept on the instance (as `functools.cached_property` does)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.service = name

    def __get__(self, clients: AwsClients, owner: type | None = None) -> Any:
        client = clients.client(self.service)
        clients.__dict__[self.service] = client
        return client


class AwsClients:
    def __init__(
        self,
        session: boto3.Session | None = None,
        region: str | None = None,
    ):
        if region is None:
            from gpudev.settings import aws_settings

            region = aws_settings().aws_region
        if session is None:
            import boto3

            session = boto3.Session(region_name=region)
        self.session = session
        self.region = region
        # A boto3 session is not thread-safe: two clients made from it at once can miss its
        # credentials (boto/boto3#1592, #2750). One environment runs one invocation at a
        # time in AWS, but the local cloud runs environments as threads sharing these.
        self._making = threading.Lock()

    def client(self, service: str) -> Any:
        with self._making:
            return self.session.client(
                service,  # type: ignore[call-overload]
                region_name=self.region,
                config=_CLIENT_CONFIG.merge(_SERVICE_CONFIG[service])
                if service in _SERVICE_CONFIG
                else _CLIENT_CONFIG,
            )

    # Each made on first use and kept (per instance).
    sqs = _Client()
    stepfunctions = _Client()
    ec2 = _Client()
    efs = _Client()
    autoscaling = _Client()
    sts = _Client()
    eks = _Client()
    secretsmanager = _Client()
    ecr = _Client()  # the API: an image's digest at submit (gpudev/images/)
    logs = _Client()  # the dev pods' output (gpudev/logs/)
    events = _Client()  # the event relay's PutEvents
    sesv2 = _Client()  # notifications: e-mail identities and sends
    kms = _Client()  # notifications: the webhook URLs, encrypted at rest
    codebuild = _Client()  # images built from a Dockerfile (gpudev/image_builds/)
    s3 = _Client()  # their contexts: presigned uploads
    rds = _Client()  # only for `generate_db_auth_token`, which signs locally (no request)


@cache
def aws_clients() -> AwsClients:
    """The default clients of this execution environment (the standard credential chain)."""
    return AwsClients()
