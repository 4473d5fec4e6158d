"""kubectl for the tests that drive the Kubernetes stand-in as an operator would: the one on
PATH, else the pinned one `make kubectl` (part of `make setup`) installs in .tools."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PINNED = ROOT / ".tools" / "kubectl" / "bin" / "kubectl"


def kubectl_path() -> str:
    found = shutil.which("kubectl") or (str(PINNED) if PINNED.exists() else None)
    if found is None:
        pytest.fail("kubectl is neither on PATH nor in .tools/kubectl: run `make kubectl`")
    return found


def kubectl(
    kubeconfig: Path, *args: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`kubectl ARGS` against the cluster `kubeconfig` names; its output as text."""
    done = subprocess.run(
        [kubectl_path(), "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(
            f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    return done
