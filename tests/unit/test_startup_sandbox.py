"""The pod's startup script (`gpudev/cluster/startup.sh`), run for real under bash in a
sandbox: every path it writes is rooted in a temporary directory (GPU_DEV_ROOT), and PATH
holds only stubs of the system commands it calls (useradd, su, sshd, apt-get, pip, ...) and
links to a short list of harmless real tools (cat, cp, mkdir, ...). A command the script
calls that is neither is "command not found", which the test sees: nothing is installed on
the machine running the tests and nothing is written outside the temporary directory. (Tests
may run as root, where a stray write to /etc would succeed: a static check below refuses
any write to a bare absolute path in the script.)"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpudev.cluster import objects
from gpudev.cluster.host_keys import new_host_key
from gpudev.cluster.vocabulary import STARTUP_FAILED

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

REAL_TOOLS = [
    "bash",
    "sh",
    "cat",
    "cp",
    "mv",
    "rm",
    "mkdir",
    "chmod",
    "touch",
    "grep",
    "sort",
    "tail",
    "ln",
    "env",
    "printf",
    "tr",
    "head",
    "ls",
]
# Each stub appends its name and arguments to $GPU_DEV_ROOT/calls and does what the test
# needs of the real command, never more.
STUBS = {
    "id": 'case "$*" in *dev*) exit 0;; *) [ -e "$GPU_DEV_ROOT/users/${!#}" ];; esac',
    "useradd": 'mkdir -p "$GPU_DEV_ROOT/users" && touch "$GPU_DEV_ROOT/users/${!#}"',
    "adduser": "exit 1",
    "chown": "exit 0",
    # the real install, without -o/-g (changing owners needs root)
    "install": "args=(); while [ $# -gt 0 ]; do case $1 in -o|-g) shift 2;; "
    '*) args+=("$1"); shift;; esac; done; exec "$REAL_INSTALL" "${args[@]}"',
    # su [-] dev [-s shell] -c command: run the command as this user, HOME=dev's home
    "su": 'while [ "$1" != -c ]; do shift; done; HOME="$GPU_DEV_ROOT/home/dev" exec sh -c "$2"',
    "ssh-keygen": "exit 0",
    "sshd": "exit 0",
    "sudo": "exit 0",
    "apt-get": "exit 0",
    "wall": "exit 0",
    "pgrep": "exit 1",
    "pkill": "exit 1",
    "sleep": "exit 1",  # the control loop's watch ends at its first sleep
    "nohup": "exit 0",
    "pip": "echo 'ERROR: no network' >&2; exit 1",
}


@dataclass
class Sandbox:
    root: Path
    bin: Path

    def file(self, path: str) -> str:
        return (self.root / path.lstrip("/")).read_text()

    def exists(self, path: str) -> bool:
        return (self.root / path.lstrip("/")).exists()

    def calls(self) -> list[str]:
        log = self.root / "calls"
        return log.read_text().splitlines() if log.exists() else []

    def stub(self, name: str, body: str) -> None:
        script = self.bin / name
        script.write_text(f'#!/bin/bash\necho "{name} $*" >> "$GPU_DEV_ROOT/calls"\n{body}\n')
        script.chmod(0o755)

    def mount(self, control: dict[str, str], keys: dict[str, str]) -> None:
        """What the kubelet mounts: the ConfigMap and the Secret, a file per key."""
        for folder, entries in (("control", control), ("keys", keys)):
            directory = self.root / "etc/gpu-dev" / folder
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
            for key, value in entries.items():
                (directory / key).write_text(value)

    def run(self, **env: str) -> subprocess.CompletedProcess[str]:
        pod_env = {
            "PATH": str(self.bin),
            "GPU_DEV_ROOT": str(self.root),
            "REAL_INSTALL": shutil.which("install") or "/usr/bin/install",
            "GPU_DEV_RESERVATION_ID": "r-1",
            "HF_HOME": "/workspace/.cache/huggingface",
            "LD_LIBRARY_PATH": "/usr/local/nvidia/lib64",
            "NCCL_SOCKET_IFNAME": "eth0",
            "OMP_NUM_THREADS": "12",
            "NNODES": "2",
            "NODE_RANK": "0",
            "NPROC_PER_NODE": "8",
            "MASTER_ADDR": "gpu-dev-r1-0.gpu-dev-r1-headless",
            "MASTER_PORT": "29500",
            "KUBERNETES_SERVICE_HOST": "10.0.0.1",
            **env,
        }
        return subprocess.run(
            ["bash", "-c", objects.startup_script()],
            env=pod_env,
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


CONTROL = {
    "expires_at": "2026-11-24T12:00:00+00:00",
    "warning_level": "15",
    "warning_text": "NOTICE: reservation r-1 expires in 14 minutes. Please save your work.",
    "health_warning": "out of memory: the container was OOM-killed 1 time(s)",
    "jupyter": "false",
}
KEYS = {
    "authorized_keys": "ssh-ed25519 AAAAowner owner\n",
    "jupyter_token": "t0ken",
    "user.gh-alice": "ssh-ed25519 AAAAalice alice\n",
}


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    root, bin_dir = tmp_path / "root", tmp_path / "bin"
    root.mkdir()
    bin_dir.mkdir()
    for tool in REAL_TOOLS:
        real = shutil.which(tool)
        assert real, f"{tool} is needed on the test machine"
        (bin_dir / tool).symlink_to(real)
    box = Sandbox(root, bin_dir)
    for name, body in STUBS.items():
        box.stub(name, body)
    (root / "etc/skel").mkdir(parents=True)
    (root / "etc/skel/.bashrc").write_text("# the image's default .bashrc\n")
    box.mount(CONTROL, KEYS)
    return box


def _exported(profile: str) -> dict[str, str]:
    """What a login shell gets from the profile script (sourced by a real sh)."""
    shown = subprocess.run(
        ["sh", "-c", f". {profile} && env"],
        env={},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)


def test_the_script_ends_as_sshd_with_what_it_wrote(sandbox: Sandbox):
    done = sandbox.run()
    assert done.returncode == 0, done.stderr
    assert "command not found" not in done.stderr
    assert "SSH daemon starting on port 22" in done.stdout
    assert "sshd -D -e" in sandbox.calls()
    config = sandbox.file("/etc/ssh/sshd_config")
    assert "AuthorizedKeysFile /etc/ssh/authorized_keys/%u\n" in config
    assert "PasswordAuthentication no\n" in config
    assert "PermitRootLogin no\n" in config


def test_ssh_sessions_get_the_pods_environment_with_torchrun_variables(sandbox: Sandbox):
    assert sandbox.run(GPU_DEV_NOTE="it's quoted").returncode == 0
    profile = sandbox.root / "etc/profile.d/gpu-dev-env.sh"
    env = _exported(str(profile))
    assert env["HF_HOME"] == "/workspace/.cache/huggingface"
    assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64"
    assert env["NCCL_SOCKET_IFNAME"] == "eth0"
    assert env["OMP_NUM_THREADS"] == "12"
    assert env["PATH"] == str(sandbox.bin)
    assert (env["NNODES"], env["NODE_RANK"], env["NPROC_PER_NODE"]) == ("2", "0", "8")
    assert env["MASTER_ADDR"] == "gpu-dev-r1-0.gpu-dev-r1-headless"
    assert env["GPU_DEV_NOTE"] == "it's quoted"
    assert "KUBERNETES_SERVICE_HOST" not in env and "GPU_DEV_ROOT" not in env
    # commands over SSH (no login shell) get them from sshd
    [set_env] = [
        line for line in sandbox.file("/etc/ssh/sshd_config").splitlines() if "SetEnv" in line
    ]
    assert "HF_HOME=/workspace/.cache/huggingface" in set_env.split()
    assert "NODE_RANK=0" in set_env.split()
    assert "GPU_DEV_NOTE" not in set_env  # a value SetEnv cannot quote is left to the profile


def test_keys_from_the_mounted_secret_are_installed_before_sshd_starts(sandbox: Sandbox):
    assert sandbox.run().returncode == 0
    assert sandbox.file("/etc/ssh/authorized_keys/dev") == KEYS["authorized_keys"]
    assert sandbox.file("/etc/ssh/authorized_keys/gh-alice") == KEYS["user.gh-alice"]
    calls = sandbox.calls()
    assert calls.index("useradd -m -s /bin/bash -- gh-alice") < calls.index("sshd -D -e")


def test_sshd_uses_the_reservations_host_key_and_keeps_it_across_a_container_restart(
    sandbox: Sandbox,
):
    """The key comes from the Secret (made once by the lifecycle), never from ssh-keygen: an
    OOM restart (the same script run again, the same Secret) answers with the pinned key."""
    host_key = new_host_key()
    sandbox.mount(CONTROL, {**KEYS, **host_key.entries()})
    assert sandbox.run().returncode == 0
    installed = sandbox.file("/etc/ssh/ssh_host_ed25519_key")
    assert installed == host_key.private
    assert sandbox.file("/etc/ssh/ssh_host_ed25519_key.pub").strip() == host_key.public
    key_file = sandbox.root / "etc/ssh/ssh_host_ed25519_key"
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    config = sandbox.file("/etc/ssh/sshd_config")
    assert "HostKey /etc/ssh/ssh_host_ed25519_key\n" in config
    assert config.count("HostKey ") == 1, "only the reservation's key is offered"
    assert not any(c.startswith("ssh-keygen") for c in sandbox.calls())

    shutil.rmtree(sandbox.root / "run")  # a new container: /run is empty, /etc/ssh is not kept
    shutil.rmtree(sandbox.root / "etc/ssh")
    assert sandbox.run().returncode == 0
    assert sandbox.file("/etc/ssh/ssh_host_ed25519_key") == installed
    assert not any(c.startswith("ssh-keygen") for c in sandbox.calls())


def test_a_secret_without_a_host_key_gets_generated_ones_as_before(sandbox: Sandbox):
    """A reservation provisioned before host keys were kept."""
    assert sandbox.run().returncode == 0
    assert "ssh-keygen -A" in sandbox.calls()
    assert "HostKey" not in sandbox.file("/etc/ssh/sshd_config")


def test_the_dev_user_gets_passwordless_sudo(sandbox: Sandbox):
    assert sandbox.run().returncode == 0
    assert sandbox.file("/etc/sudoers.d/dev") == "dev ALL=(ALL) NOPASSWD:ALL\n"
    assert oct((sandbox.root / "etc/sudoers.d/dev").stat().st_mode & 0o777) == "0o440"


def test_the_banner_shows_the_expiry_warning_and_the_pod_health_before_every_prompt(
    sandbox: Sandbox,
):
    assert sandbox.run().returncode == 0
    assert sandbox.file("/run/gpu-dev/banner") == (
        f"{CONTROL['warning_text']}\ngpu-dev: pod health: {CONTROL['health_warning']}\n"
    )
    assert "2026-11-24T12:00:00+00:00" in sandbox.file("/run/gpu-dev/expiry")
    profile = sandbox.file("/etc/profile.d/gpu-dev.sh")
    assert 'PROMPT_COMMAND="gpu_dev_banner' in profile
    assert ". /etc/profile.d/gpu-dev.sh" in sandbox.file("/etc/bash.bashrc")

    sandbox.mount({**CONTROL, "warning_text": "", "health_warning": ""}, KEYS)
    done = subprocess.run(
        [str(sandbox.root / "usr/local/bin/gpu-dev-control")],
        env={"PATH": str(sandbox.bin), "GPU_DEV_ROOT": str(sandbox.root)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert sandbox.file("/run/gpu-dev/banner") == ""


def test_dotfiles_go_in_on_first_use_and_are_never_overwritten(sandbox: Sandbox):
    assert sandbox.run().returncode == 0
    home = sandbox.root / "home/dev"
    assert (home / ".bashrc").read_text() == "# the image's default .bashrc\n"
    assert (home / ".gpu-dev-initialized").read_text() == "r-1\n"
    assert (home / ".profile").exists()

    (home / ".bashrc").write_text("# mine\n")
    (home / ".profile").unlink()
    assert sandbox.run(GPU_DEV_RESERVATION_ID="r-2").returncode == 0
    assert (home / ".bashrc").read_text() == "# mine\n"
    assert not (home / ".profile").exists()
    assert (home / ".gpu-dev-initialized").read_text() == "r-1\n"


@pytest.mark.parametrize(
    ("jupyter", "node_rank", "starts"),
    [("true", "0", True), ("true", "1", False), ("false", "0", False)],
)
def test_jupyter_runs_when_enabled_and_on_node_0_only(
    sandbox: Sandbox, jupyter: str, node_rank: str, starts: bool
):
    sandbox.stub("jupyter-lab", "exit 0")
    sandbox.mount({**CONTROL, "jupyter": jupyter}, KEYS)
    assert sandbox.run(NODE_RANK=node_rank).returncode == 0
    started = [c for c in sandbox.calls() if c.startswith("su - dev -c")]
    assert bool(started) == starts
    if starts:
        # on the pod's loopback only: reached through SSH, never over the network
        assert "jupyter-lab --ip=127.0.0.1 " in started[0] and "0.0.0.0" not in started[0]
        assert "t0ken" not in started[0], "the token never goes on a command line"
        assert sandbox.file("/run/gpu-dev/jupyter_token") == "t0ken"
        assert sandbox.file("/run/gpu-dev/jupyter.pid").strip().isdigit()
    else:
        assert not sandbox.exists("/run/gpu-dev/jupyter.pid")
    assert not any(c.startswith(("pkill", "pgrep")) for c in sandbox.calls())


def test_jupyter_off_stops_only_the_jupyter_the_loop_started(sandbox: Sandbox):
    """A user's own `jupyter lab` (say on port 8889 behind `ssh -L`) is not ours to kill."""
    managed = subprocess.Popen(["sleep", "60"])
    users_own = subprocess.Popen(["sleep", "60"])
    try:
        sandbox.mount({**CONTROL, "jupyter": "false"}, KEYS)
        pid_file = sandbox.root / "run" / "gpu-dev" / "jupyter.pid"
        pid_file.parent.mkdir(parents=True, exist_ok=True)
        pid_file.write_text(f"{managed.pid}\n")
        assert sandbox.run().returncode == 0
        assert managed.wait(timeout=10) != 0  # stopped by its pid
        assert users_own.poll() is None
        assert not pid_file.exists()
    finally:
        for process in (managed, users_own):
            process.kill()
            process.wait()


def test_jupyter_missing_from_the_image_is_never_installed_and_the_banner_says_why(
    sandbox: Sandbox,
):
    """Nothing is installed at boot: the pip stub would record a call (and fail)."""
    sandbox.mount({**CONTROL, "jupyter": "true", "warning_text": "", "health_warning": ""}, KEYS)
    assert sandbox.run().returncode == 0
    assert not any(c.startswith(("pip", "apt-get")) for c in sandbox.calls())
    assert not any(c.startswith("su - dev -c") for c in sandbox.calls())
    banner = sandbox.file("/run/gpu-dev/banner")
    assert "Jupyter is not in this image (no jupyter-lab; gpu-dev show says why" in banner

    # the image has it (the dev image): started, and the banner line is gone once it is off
    sandbox.mount({**CONTROL, "jupyter": "false"}, KEYS)
    assert sandbox.run().returncode == 0
    assert "Jupyter is not" not in sandbox.file("/run/gpu-dev/banner")
    sandbox.stub("jupyter-lab", "exit 0")
    sandbox.mount({**CONTROL, "jupyter": "true"}, KEYS)
    assert sandbox.run().returncode == 0
    assert any(c.startswith("su - dev -c") for c in sandbox.calls())
    assert "Jupyter is not" not in sandbox.file("/run/gpu-dev/banner")


def _jupyter_check(sandbox: Sandbox, path: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """Node 0's init container: its command, as the pod manifest gives it, with PATH = the
    image's commands (here the sandbox's stubs) and its termination log under GPU_DEV_ROOT."""
    (sandbox.root / "dev").mkdir(exist_ok=True)
    container = objects.jupyter_check("pytorch/pytorch:2.8.0", {"PATH": path})
    done = subprocess.run(
        container["command"],
        env={"PATH": path, "GPU_DEV_ROOT": str(sandbox.root)},
        cwd=sandbox.root,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done, sandbox.file(container["terminationMessagePath"])


def test_the_jupyter_check_says_available_only_when_the_image_has_jupyter_lab(sandbox: Sandbox):
    done, message = _jupyter_check(sandbox, str(sandbox.bin))
    assert done.returncode == 0
    assert message == f"jupyter=unavailable: no jupyter-lab on PATH ({sandbox.bin})\n"
    assert sandbox.calls() == []  # it only looked: nothing installed, nothing run

    sandbox.stub("jupyter-lab", "exit 0")
    done, message = _jupyter_check(sandbox, str(sandbox.bin))
    assert (done.returncode, message) == (0, "jupyter=available\n")
    assert sandbox.calls() == []  # found on PATH, never started


def test_missing_sshd_and_sudo_are_installed_from_the_images_package_manager(sandbox: Sandbox):
    (sandbox.bin / "sshd").unlink()
    (sandbox.bin / "sudo").unlink()
    done = sandbox.run()
    assert "apt-get install -y -qq --no-install-recommends openssh-server sudo" in sandbox.calls()
    # the stubbed apt-get installed nothing: no sshd to become, said plainly, and in the
    # termination message the kubelet keeps (the reservation's failure reason shows it)
    assert done.returncode == 1
    assert "no sshd in this image" in done.stderr
    assert sandbox.file("/dev/termination-log") == (
        f"{STARTUP_FAILED}no sshd in this image, and apt-get could not install "
        "openssh-server (the dev image has it: deploy/dev-image)\n"
    )


def test_apt_get_is_tried_again_after_a_failure_and_what_it_installs_is_used(sandbox: Sandbox):
    """A network blip at the first attempt: tried again 5 s later, and the boot goes on."""
    (sandbox.bin / "sshd").unlink()
    (sandbox.bin / "sudo").unlink()
    sandbox.stub(
        "apt-get",
        # the first update fails; the install puts sshd and sudo (stubs) on the PATH
        'tried="$GPU_DEV_ROOT/apt-tried"; [ -e "$tried" ] || { touch "$tried"; exit 100; }\n'
        'if [ "$1" = install ]; then bin=${0%/*}\n'
        '  printf \'#!/bin/bash\\nexit 0\\n\' > "$bin/sshd"; cp "$bin/sshd" "$bin/sudo"\n'
        '  chmod 755 "$bin/sshd" "$bin/sudo"; fi',
    )
    done = sandbox.run()
    install = "apt-get install -y -qq --no-install-recommends openssh-server sudo"
    calls = sandbox.calls()
    assert calls[: calls.index(install) + 1] == [
        "apt-get update -qq",
        "sleep 5",
        "apt-get update -qq",
        install,
    ]
    assert done.returncode == 0, done.stderr
    assert "apt-get failed; trying again in 5s" in done.stderr
    assert not sandbox.exists("/dev/termination-log")
    assert sandbox.file("/etc/sudoers.d/dev") == "dev ALL=(ALL) NOPASSWD:ALL\n"


def test_apt_get_failing_three_times_fails_the_startup_with_its_reason(sandbox: Sandbox):
    (sandbox.bin / "sshd").unlink()
    sandbox.stub("apt-get", "exit 100")
    done = sandbox.run()
    assert [c for c in sandbox.calls() if c.startswith(("apt-get", "sleep"))] == [
        "apt-get update -qq",
        "sleep 5",
        "apt-get update -qq",
        "sleep 10",
        "apt-get update -qq",
    ]
    assert done.returncode == 1
    assert sandbox.file("/dev/termination-log").startswith(
        f"{STARTUP_FAILED}no sshd in this image, and apt-get could not install "
    )


def test_nothing_is_written_outside_the_sandbox(sandbox: Sandbox, tmp_path: Path):
    before = set(os.listdir(tmp_path))
    done = sandbox.run()
    assert done.returncode == 0
    assert set(os.listdir(tmp_path)) == before
    assert "Permission denied" not in done.stderr and "No such file" not in done.stderr
    # every path the script writes is under $ROOT / $RUN / $KEYS...: no bare absolute target
    script = objects.startup_script().split("<<'PROFILE'", 1)
    script = script[0] + script[1].split("\nPROFILE\n", 1)[1]
    assert not re.search(
        r"(>>?|mkdir -p|install -d(?: -m [0-7]+)?|touch) *\"?/(?!dev/null)", script
    )


def test_the_login_profile_hooks_the_banner_into_the_prompt_once(sandbox: Sandbox):
    """/etc/profile sources /etc/bash.bashrc, which sources the profile again."""
    assert sandbox.run().returncode == 0
    profile = sandbox.root / "etc/profile.d/gpu-dev.sh"
    shown = subprocess.run(
        [
            "bash",
            "--norc",
            "--noprofile",
            "-i",
            "-c",
            f". {profile}; . {profile}; "
            'echo "[$PROMPT_COMMAND]"; type gpu_dev_banner >/dev/null && echo hooked',
        ],
        env={"PATH": str(sandbox.bin), "PROMPT_COMMAND": "history -a"},
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert shown.splitlines()[-2:] == ["[gpu_dev_banner;history -a]", "hooked"]
