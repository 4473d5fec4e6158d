"""Where things are in the repository, for the CDK app and its helper scripts."""

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYER_DIR = ROOT / "layers" / "gpudev"
FUNCTIONS_DIR = ROOT / "functions"
MIGRATIONS_DIR = ROOT / "migrations"
BUILD_DIR = ROOT / ".build"


def uv_executable() -> str:
    """The project's pinned uv (installed by make), else one on PATH."""
    local = ROOT / ".tools" / "bin" / "uv"
    found = str(local) if local.exists() else shutil.which("uv")
    if not found:
        raise RuntimeError("uv not found: run `make setup` first")
    return found
