"""`reserve --preserve-entrypoint` (docs/images.md#the-images-own-entrypoint): the pod runs its
image's own entrypoint and command instead of our startup script, so there is no SSH and no
`dev` user. What it makes no sense with is refused here, with a sentence, before anything is
written; migration 0043's constraint is the last line of defence."""

from __future__ import annotations

from gpudev.errors import InvalidRequest

FIELD = "preserve_entrypoint"


def check_entrypoint_request(image: str | None, jupyter: bool) -> None:
    """Before the transaction: an image named, no Jupyter. The default image is a dev
    image whose entrypoint is a shell: run as is, it would exit at once."""
    if image is None:
        raise InvalidRequest(
            "--preserve-entrypoint runs an image's own entrypoint: name the image with "
            "--image (the default image's entrypoint is a shell, which exits at once)",
            field=FIELD,
        )
    if jupyter:
        raise InvalidRequest(
            "--preserve-entrypoint and --jupyter do not go together: Jupyter is started by "
            "our startup script, which does not run when the image's entrypoint does",
            field=FIELD,
        )


def check_entrypoint_nodes(total_nodes: int) -> None:
    """Once the shape is known: one node. A multinode reservation's launcher, hostfile and
    the nodes' key are SSH between the pods, which the image's own entrypoint does not run."""
    if total_nodes > 1:
        raise InvalidRequest(
            f"--preserve-entrypoint runs on one node, and this request needs {total_nodes}: "
            "the nodes of a multinode reservation reach each other over SSH, which the "
            "image's own entrypoint does not start; ask for at most one node's GPUs",
            field=FIELD,
        )


def check_entrypoint_jupyter(preserve_entrypoint: bool, enabled: bool) -> None:
    """`gpu-dev edit --enable-jupyter` on such a reservation."""
    if preserve_entrypoint and enabled:
        raise InvalidRequest(
            "Jupyter cannot be enabled: this reservation runs its image's own entrypoint, "
            "not our startup script, which is what starts Jupyter",
            field="jupyter",
        )
