"""The build context `reserve --dockerfile` and `image build` upload (docs/images.md#built-
images): the context directory as a tar, without what its `.dockerignore` excludes, with the
Dockerfile at `Dockerfile.gpu-dev` (where the build reads it, wherever it was on disk).

The tar is reproducible: entries in path order, owner root, mtime 0, modes reduced to
0644/0755, so the same files give the same bytes and the same sha256, which names the
image: the same context again reuses the built image with no build. Too large a context is
refused before the tar is finished (`ContextTooLarge`), saying what is largest.

`.dockerignore` as Docker reads it (docs.docker.com/build/concepts/context/#dockerignore-
files): one pattern a line, `#` comments, paths relative to the context root (a leading `/`
ignored), `*` and `?` within a path component, `**` across any number of them, `!` to
re-include; the last pattern that matches a path decides, and a pattern that matches a
directory matches everything under it."""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

DOCKERFILE_NAME = "Dockerfile.gpu-dev"
MAX_CONTEXT_BYTES = 500_000_000  # the deployments' default (IMAGE_BUILD_MAX_CONTEXT_BYTES)


class ContextError(Exception):
    """A context that cannot be sent: said in one line (the CLI exits non-zero)."""


class ContextTooLarge(ContextError):
    pass


@dataclass(frozen=True)
class IgnorePattern:
    regex: re.Pattern[str]
    negated: bool


@dataclass
class PackedContext:
    file: IO[bytes]  # the tar, positioned at 0
    sha256: str
    size: int
    files: int

    def close(self) -> None:
        self.file.close()


def parse_dockerignore(text: str) -> list[IgnorePattern]:
    patterns = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line[1:].strip() if negated else line
        line = os.path.normpath(line).replace(os.sep, "/").lstrip("/")
        if line in ("", "."):
            continue
        patterns.append(IgnorePattern(re.compile(_regex(line)), negated))
    return patterns


def _regex(pattern: str) -> str:
    out = ["^"]
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):  # "**/": zero or more directories
                i += 1
                out.append("(?:.*/)?")
            else:
                out.append(".*")
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : end]
                if body.startswith("^"):
                    body = "!" + body[1:]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    out.append("$")
    return "".join(out)


def is_ignored(path: str, patterns: list[IgnorePattern]) -> bool:
    """Whether `path` (relative, `/`-separated) is left out: the last pattern matching it or
    one of its parent directories decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    ignored = False
    for pattern in patterns:
        if any(pattern.regex.match(prefix) for prefix in prefixes):
            ignored = not pattern.negated
    return ignored


def context_files(root: Path, patterns: list[IgnorePattern]) -> list[tuple[str, Path]]:
    """(path in the tar, path on disk) of every file and symlink sent, in path order."""
    found: list[tuple[str, Path]] = []
    for directory, dirs, files in os.walk(root, followlinks=False):
        base = Path(directory)
        for name in sorted(files) + sorted(d for d in dirs if (base / d).is_symlink()):
            full = base / name
            relative = full.relative_to(root).as_posix()
            if not is_ignored(relative, patterns):
                found.append((relative, full))
        dirs.sort()
    return sorted(found)


def pack_context(
    dockerfile: Path, context: Path | None = None, limit: int = MAX_CONTEXT_BYTES
) -> PackedContext:
    """The tar of `context` (default: the Dockerfile's directory) with the Dockerfile added,
    in a temporary file, and its sha256. `ContextError` for a missing Dockerfile or context,
    `ContextTooLarge` above `limit` bytes."""
    if not dockerfile.is_file():
        raise ContextError(f"no Dockerfile at {dockerfile}")
    root = context if context is not None else dockerfile.parent
    if not root.is_dir():
        raise ContextError(f"the build context {root} is not a directory")
    ignore = root / ".dockerignore"
    patterns = parse_dockerignore(ignore.read_text()) if ignore.is_file() else []
    if context is None:
        _refuse_secrets(root, patterns)
    entries = [(p, f) for p, f in context_files(root, patterns) if p != DOCKERFILE_NAME]
    _check_size(entries, dockerfile, limit)
    out = tempfile.TemporaryFile()  # noqa: SIM115 (handed to the caller, who closes it)
    try:
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, path in entries:
                _add(tar, name, path)
            _add(tar, DOCKERFILE_NAME, dockerfile)
        size = out.tell()
        if size > limit:
            raise ContextTooLarge(_too_large(size, limit, entries))
        out.seek(0)
        digest = hashlib.sha256()
        for chunk in iter(lambda: out.read(1 << 20), b""):
            digest.update(chunk)
        out.seek(0)
    except BaseException:
        out.close()
        raise
    return PackedContext(out, digest.hexdigest(), size, len(entries) + 1)


SECRET_DIRECTORIES = (".ssh", ".aws", ".gnupg", ".docker", ".kube")


def _refuse_secrets(root: Path, patterns: list[IgnorePattern]) -> None:
    """A context taken from the Dockerfile's directory never holds the home directory (is
    it, or a directory above it), nor sends a credentials directory at its top (`.ssh`,
    `.aws`, …): named with --context, it is the user's choice."""
    if Path.home().resolve().is_relative_to(root.resolve()):
        raise ContextError(
            f"the build context would hold your home directory ({root}), with your keys and "
            "credentials: put the Dockerfile in a directory of its own, or name the context "
            "with --context"
        )
    sent = [d for d in SECRET_DIRECTORIES if (root / d).exists() and not is_ignored(d, patterns)]
    if sent:
        raise ContextError(
            f"the build context {root} holds {' and '.join(sent)}, which would be uploaded: "
            "put the Dockerfile in a directory of its own, list them in .dockerignore, or "
            "name the context with --context"
        )


def _add(tar: tarfile.TarFile, name: str, path: Path) -> None:
    info = tar.gettarinfo(str(path), arcname=name)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    if info.isfile():
        info.mode = 0o755 if info.mode & 0o111 else 0o644
        with path.open("rb") as handle:
            tar.addfile(info, handle)
    elif info.issym():
        info.mode = 0o777
        tar.addfile(info)
    else:  # sockets, devices: nothing a build can read
        return


def _check_size(entries: list[tuple[str, Path]], dockerfile: Path, limit: int) -> None:
    total = dockerfile.stat().st_size
    for _, path in entries:
        if not path.is_symlink():
            total += path.stat().st_size
    if total > limit:
        raise ContextTooLarge(_too_large(total, limit, entries))


def _too_large(size: int, limit: int, entries: list[tuple[str, Path]]) -> str:
    sized = sorted(((p.lstat().st_size, name) for name, p in entries), reverse=True)[:3]
    largest = ", ".join(f"{name} ({n / 1e6:,.1f} MB)" for n, name in sized)
    return (
        f"the build context is {size / 1e6:,.1f} MB, over the limit of {limit / 1e6:,.0f} MB; "
        f"largest: {largest or 'none'}. Leave out what the build does not need with a "
        ".dockerignore"
    )
