"""`gpu-dev completion bash|zsh|fish`: the shell completion script."""

from __future__ import annotations

import click


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script, e.g. eval "$(gpu-dev completion bash)"."""
    from click.shell_completion import get_completion_class

    completion_class = get_completion_class(shell)
    assert completion_class is not None
    root = ctx.find_root().command
    click.echo(completion_class(root, {}, "gpu-dev", "_GPU_DEV_COMPLETE").source())
