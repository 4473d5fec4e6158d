"""An official Kubernetes client for a bare stand-in API server (no EKS in front of it)."""

from __future__ import annotations

import base64
from typing import Any


def fake_eks_token(access_key_id: str) -> str:
    """A token of the shape EKS takes (`k8s-aws-v1.` + a presigned GetCallerIdentity URL),
    for `access_key_id`; the stand-in reads the key from it and does not check the signature."""
    url = (
        "https://sts.us-east-2.amazonaws.com/?Action=GetCallerIdentity&X-Amz-Credential="
        f"{access_key_id}%2F20260101%2Fus-east-2%2Fsts%2Faws4_request&X-Amz-SignedHeaders="
        "host%3Bx-k8s-aws-id&X-Amz-Signature=00"
    )
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def stand_in_api_client(server_url: str, access_key_id: str) -> Any:
    """A `kubernetes.client.ApiClient` for the stand-in at `server_url` (close it after)."""
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = server_url
    configuration.api_key = {"authorization": fake_eks_token(access_key_id)}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(configuration)
