"""The opt-in `Include` of the per-reservation SSH configs in ~/.ssh/config, so `ssh
gpu-dev-<id>` and VS Code Remote-SSH know every live reservation.

The block goes at the top of the file: an `Include` after a `Host` line would apply only to
that host. Adding it twice changes nothing; removing it leaves the rest of the file byte for
byte; the file is replaced atomically with its mode kept, and a symlinked ~/.ssh/config
(dotfile managers) is edited where it points, never replaced by a copy."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from gpudev_cli.client import CliError
from gpudev_cli.ssh import CONFIG_SUFFIX, state_dir

BEGIN = "# >>> gpu-dev: live reservations (remove with `gpu-dev config ssh-include --remove`)\n"
END = "# <<< gpu-dev\n"


def user_config() -> Path:
    return Path.home() / ".ssh" / "config"


def block() -> str:
    pattern = str(state_dir().absolute() / f"*{CONFIG_SUFFIX}")
    if '"' in pattern:
        raise CliError(f"{pattern} contains a double quote, which ssh_config cannot express")
    return f'{BEGIN}Include "{pattern}"\n{END}'


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {path}: {exc}") from None


def _span(text: str) -> tuple[int, int] | None:
    start = text.find(BEGIN)
    if start < 0:
        return None
    end = text.find(END, start)
    if end < 0:
        raise CliError(
            f"{user_config()} has the gpu-dev start marker without its end marker "
            f"({END.strip()!r}); fix it by hand"
        )
    return start, end + len(END)


def installed() -> bool:
    """Whether the block is there (an unreadable or broken file counts as no: `show` only
    uses this to phrase a hint, and must not fail over it)."""
    try:
        return _span(_read(user_config().resolve())) is not None
    except CliError:
        return False


def _replace(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".config.gpu-dev.")
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def install() -> bool:
    """Add the block (True), or leave an up-to-date one alone (False)."""
    path = user_config().resolve()
    text = _read(path)
    span = _span(text)
    wanted = block()
    if span is not None:
        if text[span[0] : span[1]] == wanted:
            return False
        text = text[: span[0]] + text[span[1] :]  # GPU_DEV_HOME moved: rewrite the block
    _replace(path, wanted + text)
    return True


def remove() -> bool:
    """Take the block out (True), or report there was none (False)."""
    path = user_config().resolve()
    text = _read(path)
    span = _span(text)
    if span is None:
        return False
    _replace(path, text[: span[0]] + text[span[1] :])
    return True
