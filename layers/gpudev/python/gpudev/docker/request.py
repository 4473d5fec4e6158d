"""`reserve --docker`: what it is refused with, each with a sentence, before anything is
written. Migration 0046's constraint is the last line of defence for the shape rules; the
operator's switch (CDK context `gpudev:allowDocker`) is checked here only."""

from __future__ import annotations

from gpudev.errors import InvalidRequest

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


def check_docker_nodes(total_nodes: int) -> None:
    """Once the shape is known: one node. A Docker daemon per node of a multinode
    reservation would be as many privileged containers, for a use (building images, running
    services beside the code) that one node serves."""
    if total_nodes > 1:
        raise InvalidRequest(
            f"--docker runs on one node, and this request needs {total_nodes}: a multinode "
            "reservation has no Docker daemon; ask for at most one node's GPUs, or reserve "
            "without --docker",
            field=FIELD,
        )
