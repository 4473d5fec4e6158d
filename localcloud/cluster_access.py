"""Who may use the local cluster, and with which Kubernetes permissions, rendered from the
same declarations as the CDK stack, and the operator's `kubectl apply` of deploy/kubernetes/.

Access entries (moto's EKS has none, so the stand-in keeps the table):
- each cluster-using function's role, in its declared Kubernetes group
  (`FunctionSpec.kubernetes_group`, as cdk_app/functions.py's `CfnAccessEntry`); the local
  cloud creates these roles in its IAM, named as deployed;
- the identity the in-process functions share (in AWS each has its own role): one entry in
  the union of the declared groups, the most any of them has, as the shared database pool
  takes the most lenient limits (function_environment.py). A function in processes of its
  own (`--function-processes`) signs as a session of its own role instead
  (`function_identities`), with exactly its group's permissions;
- the admin role (carol's SSO permission set, the local `ADMIN_ROLES`) with
  AmazonEKSClusterAdminPolicy at cluster scope, as cdk_app/cluster_stack.py's admin entries.

At start the local cloud applies deploy/kubernetes/*.yaml through the API server as that
admin (authenticated and authorized like any caller), so RBAC is what EKS has once an
operator ran `kubectl apply -f deploy/kubernetes/`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML comes with the kubernetes client; no stubs

from cdk_app.declaration import Deployment
from localcloud.kubernetes.access_entries import (
    CLUSTER_ADMIN_POLICY,
    AccessEntries,
    AccessEntry,
)
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.resources import KINDS, api_version

MANIFESTS_DIR = Path(__file__).parents[1] / "deploy" / "kubernetes"
# In the order an operator applies them (namespace.yaml says so).
MANIFESTS = ("namespace.yaml", "rbac.yaml", "network-policies.yaml")
# The image pre-puller, a folder of its own (`kubectl apply -f deploy/kubernetes/prepuller/`
# after the above), applied with `--prepull` (Options.prepull).
PREPULLER_MANIFESTS = (
    "prepuller/namespace.yaml",
    "prepuller/daemonset.yaml",
    "prepuller/rbac.yaml",
)
SESSION_SECONDS = 12 * 3600  # a role's longest session: restart the cloud to renew
_RESOURCE_OF_KIND = {kind: resource for resource, (kind, _) in KINDS.items()}

Handle = Callable[[str, str, dict[str, str], bytes], tuple[int, Any]]


def function_role_name(deployed_name: str) -> str:
    return f"{deployed_name}-role"


def cluster_groups(deployment: Deployment) -> dict[str, str]:
    """The Kubernetes group of every cluster-using function, by deployed name."""
    return {f.deployed_name: f.kubernetes_group for f in deployment.functions if f.uses_cluster}


def create_function_roles(deployment: Deployment, iam: Any) -> dict[str, str]:
    """One IAM role per cluster-using function, as CDK gives each its own; ARNs by name."""
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "sts:AssumeRole",
                "Principal": {"Service": "lambda.amazonaws.com"},
            }
        ],
    }
    return {
        name: iam.create_role(
            RoleName=function_role_name(name),
            AssumeRolePolicyDocument=json.dumps(trust),
            MaxSessionDuration=SESSION_SECONDS,
        )["Role"]["Arn"]
        for name in cluster_groups(deployment)
    }


def function_identities(
    deployment: Deployment, function_roles: dict[str, str], sts: Any
) -> dict[str, dict[str, str]]:
    """Credentials of a session of each cluster-using function's role, by spec name, as
    Lambda hands its execution environment: for functions in processes of their own."""
    identities = {}
    for spec in deployment.functions:
        if spec.deployed_name not in function_roles:
            continue
        credentials = sts.assume_role(
            RoleArn=function_roles[spec.deployed_name],
            RoleSessionName=spec.deployed_name,
            DurationSeconds=SESSION_SECONDS,
        )["Credentials"]
        identities[spec.name] = {
            "AWS_ACCESS_KEY_ID": credentials["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": credentials["SecretAccessKey"],
            "AWS_SESSION_TOKEN": credentials["SessionToken"],
        }
    return identities


def access_entries(
    deployment: Deployment,
    function_roles: dict[str, str],
    shared_function_principal: str,
    admin_role_arns: list[str],
) -> AccessEntries:
    groups = cluster_groups(deployment)
    entries = [
        AccessEntry(function_roles[name], kubernetes_groups=(group,))
        for name, group in groups.items()
    ]
    entries.append(
        AccessEntry(
            shared_function_principal, kubernetes_groups=tuple(sorted(set(groups.values())))
        )
    )
    entries += [
        AccessEntry(arn, access_policies=(CLUSTER_ADMIN_POLICY,)) for arn in admin_role_arns
    ]
    return AccessEntries.of(entries)


def manifests(
    directory: Path = MANIFESTS_DIR, names: tuple[str, ...] = MANIFESTS
) -> list[dict[str, Any]]:
    documents: list[dict[str, Any]] = []
    for name in names:
        documents += [d for d in yaml.safe_load_all((directory / name).read_text()) if d]
    return documents


def object_path(manifest: dict[str, Any]) -> str:
    """The collection URL of the manifest's kind (and namespace)."""
    resource = _RESOURCE_OF_KIND[manifest["kind"]]
    version = api_version(resource)
    prefix = "/api/v1" if version == "v1" else f"/apis/{version}"
    namespace = manifest["metadata"].get("namespace")
    if KINDS[resource][1]:
        prefix += f"/namespaces/{namespace or 'default'}"
    return f"{prefix}/{resource}"


def apply(handle: Handle, token: str, documents: list[dict[str, Any]]) -> None:
    """`kubectl apply` in its simplest form: create, or replace what exists; any refusal
    (401, 403, 422) stops the start with the API server's message."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for manifest in documents:
        collection = object_path(manifest)
        status, body = handle("POST", collection, headers, json.dumps(manifest).encode())
        if status == 409:
            named = f"{collection}/{manifest['metadata']['name']}"
            status, current = handle("GET", named, headers, b"")
            if status == 200:
                replacement = {
                    **manifest,
                    "metadata": {
                        **manifest["metadata"],
                        "resourceVersion": current["metadata"]["resourceVersion"],
                    },
                }
                status, body = handle("PUT", named, headers, json.dumps(replacement).encode())
        if status not in (200, 201):
            raise ApiError(status, body.get("reason", ""), body.get("message", str(body)))
