"""`gpu-dev image …` and the upload `reserve --dockerfile` shares: pack the build context
(build_context.py), ask the API where to put it (nothing to put when its image is built or
building already), PUT it to the presigned S3 URL with a progress bar, and follow a build."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import IO, Any

import click

from gpudev_cli.build_context import ContextError, PackedContext, pack_context
from gpudev_cli.client import CliError, SigV4Client
from gpudev_cli.context import Context, console, progress

POLL_SECONDS = 2.0
UPLOAD_TIMEOUT_SECONDS = 600.0


def dockerfile_options(command: Any) -> Any:
    command = click.option(
        "--context",
        "context_dir",
        type=click.Path(path_type=Path, file_okay=False),
        help="the build context directory (default: the Dockerfile's directory)",
    )(command)
    return command


def resolve_dockerfile(path: Path) -> Path:
    """A Dockerfile, or a directory holding one named `Dockerfile`."""
    return path / "Dockerfile" if path.is_dir() else path


def upload_context(
    client: SigV4Client, dockerfile: Path, context_dir: Path | None
) -> tuple[str, dict[str, Any]]:
    """The context's hash and the API's answer, after uploading it if the API asked for it."""
    try:
        packed = pack_context(resolve_dockerfile(dockerfile), context_dir)
    except ContextError as error:
        raise CliError(str(error)) from None
    try:
        answer = client.request(
            "POST",
            "/v1/images/uploads",
            {"context_hash": packed.sha256, "size_bytes": packed.size},
        )
        if answer["action"] == "upload":
            _put(answer["upload_url"], packed)
        return packed.sha256, answer
    finally:
        packed.close()


class _Counted:
    """The tar as http.client reads it, each block counted into the progress bar."""

    def __init__(self, file: IO[bytes], advance: Any):
        self._file = file
        self._advance = advance

    def read(self, size: int = -1) -> bytes:
        chunk = self._file.read(size)
        self._advance(len(chunk))
        return chunk


def _put(url: str, packed: PackedContext) -> None:
    import urllib.error
    import urllib.request

    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    with Progress(
        "uploading the build context",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        console=Console(stderr=True),  # never in a script's output
        transient=True,
    ) as bar:
        task = bar.add_task("upload", total=packed.size)
        request = urllib.request.Request(
            url,
            data=_Counted(packed.file, lambda n: bar.advance(task, n)),
            method="PUT",
            headers={"Content-Length": str(packed.size), "Content-Type": "application/x-tar"},
        )
        try:
            with urllib.request.urlopen(request, timeout=UPLOAD_TIMEOUT_SECONDS) as answer:
                answer.read()
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")[:300]
            raise CliError(
                f"the upload of the build context was refused ({error.code}): {detail}"
            ) from None
        except OSError as error:
            raise CliError(f"the upload of the build context failed: {error}") from None


def follow_build(client: SigV4Client, context_hash: str) -> dict[str, Any]:
    """Poll the build until it ends, its phase on the status line."""
    started = time.monotonic()
    build = client.request("GET", f"/v1/images/builds/{context_hash}")
    with progress.status("") as status:
        while build["status"] in ("building", "uploaded"):
            elapsed = int(time.monotonic() - started)
            phase = (build.get("phase") or "starting").lower()
            status.update(f"[{elapsed // 60}m{elapsed % 60:02d}s] building image: {phase}")
            time.sleep(POLL_SECONDS)
            build = client.request("GET", f"/v1/images/builds/{context_hash}")
    return dict(build)


@click.group()
def image() -> None:
    """Images built from your Dockerfiles (AWS CodeBuild), named by their context's hash."""


@image.command("build")
@click.argument("path", type=click.Path(path_type=Path))
@dockerfile_options
@click.option(
    "--retry",
    is_flag=True,
    help="build a context that failed again now (otherwise only some minutes after it failed)",
)
@click.pass_obj
def build(obj: Context, path: Path, context_dir: Path | None, retry: bool) -> None:
    """Build the image of PATH (a Dockerfile, or a directory with one) ahead of time."""
    client = obj.client()
    context_hash, answer = upload_context(client, path, context_dir)
    if answer["action"] != "built":
        body: dict[str, Any] = {"context_hash": context_hash}
        if retry:
            body["retry"] = True
        client.request("POST", "/v1/images/builds", body)
    final = follow_build(client, context_hash)
    obj.emit(final, _render_build)
    if final["status"] != "succeeded":
        sys.exit(1)


def _render_build(b: dict[str, Any]) -> None:
    if b["status"] == "succeeded":
        console.print(f"Built [bold]{b['image']}[/] ({b['image_digest']})")
        console.print(f"Reserve it with `gpu-dev reserve --image {b['image']}` or --dockerfile.")
        return
    console.print(f"[red]The build failed[/] ({b.get('phase')}). The end of its log:")
    console.print(b.get("log_tail") or "(no log)", markup=False, highlight=False)


@image.command("list")
@click.pass_obj
def list_images(obj: Context) -> None:
    """The images you built or uploaded contexts for, newest first."""
    builds = obj.client().request("GET", "/v1/images")["builds"]
    obj.emit(builds, _table)


def _table(builds: list[dict[str, Any]]) -> None:
    if not builds:
        console.print("No images. Build one with `gpu-dev image build PATH`.")
        return
    from rich.table import Table

    table = Table(title="Your built images")
    for column in ("Hash", "Status", "Size", "Built at", "Image"):
        table.add_column(column)
    for b in builds:
        size = f"{b['size_bytes'] / 1e9:.2f} GB" if b.get("size_bytes") else "-"
        status = b["status"] + (
            f" ({b['phase'].lower()})" if b["status"] == "building" and b.get("phase") else ""
        )
        table.add_row(
            b["context_hash"][:12],
            status,
            size,
            (b.get("finished_at") or "-")[:16].replace("T", " "),
            b.get("image") or "-",
        )
    console.print(table)
