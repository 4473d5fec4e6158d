"""Docker inside the dev server (`reserve --docker`, docs/images.md#docker-inside-the-dev-
server): the operator's switch and the sidecar's image, handed to the functions that use them.

- `gpudev:allowDocker` (default false): the API accepts `docker: true` only when it is true;
  otherwise it answers 422 naming this key. The sidecar is privileged (root on the node, which
  reaches every user's shared files through the EFS CSI driver's role: docs/security.md), so
  it is off unless an operator turns it on, after applying deploy/kubernetes (the
  gpu-dev-docker namespace, its RBAC and network policies).
- `gpudev:dockerImage` (default docker:27-dind): the sidecar's image, and where the pod's
  `docker` client is copied from.

Infrastructure never imports runtime code: gpudev/settings.py reads ALLOW_DOCKER and
LIFECYCLE_DOCKER_IMAGE."""

from __future__ import annotations

from aws_cdk import aws_lambda as lambda_
from constructs import Construct

ALLOW_DOCKER_CONTEXT = "gpudev:allowDocker"
DOCKER_IMAGE_CONTEXT = "gpudev:dockerImage"
DEFAULT_DOCKER_IMAGE = "docker:27-dind"


def allow_docker(scope: Construct) -> bool:
    raw: object = scope.node.try_get_context(ALLOW_DOCKER_CONTEXT)
    if raw is None:
        return False
    if isinstance(raw, bool):
        return raw
    if raw in ("true", "false"):  # -c gpudev:allowDocker=true on the command line
        return raw == "true"
    raise ValueError(f"context {ALLOW_DOCKER_CONTEXT}: true or false; got {raw!r}")


def docker_image(scope: Construct) -> str:
    raw = scope.node.try_get_context(DOCKER_IMAGE_CONTEXT)
    if raw is None or raw == "":
        return DEFAULT_DOCKER_IMAGE
    if not isinstance(raw, str) or raw.split() != [raw]:
        raise ValueError(f"context {DOCKER_IMAGE_CONTEXT}: an image reference; got {raw!r}")
    return raw


def configure_docker(
    scope: Construct, api_function: lambda_.Function, tasks_function: lambda_.Function
) -> None:
    """The API's switch and the reservation tasks' sidecar image."""
    api_function.add_environment("ALLOW_DOCKER", "true" if allow_docker(scope) else "false")
    tasks_function.add_environment("LIFECYCLE_DOCKER_IMAGE", docker_image(scope))
