"""The pod's startup script and the control loop it installs are valid bash (they run only
in the pod, so a syntax error would surface only as a crash-looping dev server)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from gpudev.lifecycle.objects import STARTUP

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _syntax_errors(script: str) -> str:
    checked = subprocess.run(
        ["bash", "-n"], input=script, capture_output=True, text=True, check=False
    )
    return checked.stderr


def test_the_startup_script_parses():
    assert _syntax_errors(STARTUP) == ""


def test_the_control_loop_parses():
    control = STARTUP.split("<<'CONTROL'\n", 1)[1].split("\nCONTROL\n", 1)[0]
    assert "install_keys" in control
    assert _syntax_errors(control) == ""
