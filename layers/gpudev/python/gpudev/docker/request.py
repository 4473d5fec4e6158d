"""`reserve --docker`: what it is refused with, each with a sentence, before anything is
written. Migration 0046's constraint is the last line of defence for the shape rules; the
operator's switch (CDK context `gpudev:allowDocker`) is checked here only."""

from __future__ import annotations

from gpudev.errors import InvalidRequest
from gpudev.models import GpuType

FIELD = "docker"
ALLOW_DOCKER_CONTEXT = "gpudev:allowDocker"


def check_docker_request(allowed: bool, profiling: bool) -> None:
    """Before the transaction: the operators allow Docker, and no profiling with it."""
    if not allowed:
        raise InvalidRequest(
            "Docker inside the dev server is not offered by this deployment: its Docker "
            "daemon runs privileged, which is root on the node, so the operators turn it on "
            f"with CDK context {ALLOW_DOCKER_CONTEXT} (docs/operator-guide.md); reserve "
            "without --docker",
            field=FIELD,
        )
    if profiling:
        raise InvalidRequest(
            "--docker and --profiling do not go together: each runs in a namespace of its "
            "own (gpu-dev-docker, gpu-dev-profiling) and profiling has nodes of its own; "
            "reserve one of them",
            field=FIELD,
        )


def check_docker_shape(gpu_type: GpuType, gpu_count: int, total_nodes: int) -> None:
    """Once the shape is known: one whole GPU node. The daemon is root on its node, so no
    other user's pod may share the node (docs/security.md); a Docker daemon per node of a
    multinode reservation would be as many privileged containers, for a use (building
    images, running services beside the code) that one node serves."""
    if total_nodes > 1:
        raise InvalidRequest(
            f"--docker runs on one node, and this request needs {total_nodes}: a multinode "
            "reservation has no Docker daemon; ask for at most one node's GPUs, or reserve "
            "without --docker",
            field=FIELD,
        )
    if gpu_type.is_cpu_only:
        raise InvalidRequest(
            f"--docker takes a whole GPU node, and {gpu_type.gpu_type} nodes are shared by "
            "several reservations: its daemon is root on the node; reserve a GPU type's "
            "whole node with --docker, or reserve without it",
            field=FIELD,
        )
    if gpu_count < gpu_type.max_per_node:
        raise InvalidRequest(
            f"--docker takes a whole node, and a {gpu_type.gpu_type} node has "
            f"{gpu_type.max_per_node} GPUs: its daemon is root on the node, so no other "
            f"user's pod may share it; ask for {gpu_type.max_per_node} GPUs, or reserve "
            "without --docker",
            field=FIELD,
        )
