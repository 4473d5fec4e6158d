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
import signal
import subprocess
import tempfile
from collections.abc import Iterator
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
    "wc",
    "find",
    "stat",
]
OWNER_UID = 1081  # dev's, as the script's useradd gives it
FIRST_COLLABORATOR_UID = 42000  # the useradd stub's first: no account of the test machine's
# Each stub appends its name and arguments to $GPU_DEV_ROOT/calls and does what the test
# needs of the real command, never more.
# Accounts are files $GPU_DEV_ROOT/users/<name> holding their uid; when the tests run as root,
# owners are real uids (chown), so a test can act as the collaborator and be refused.
STUBS = {
    "id": 'name=${!#}; if [ "$name" = dev ]; then uid=1081\n'
    'elif [ -e "$GPU_DEV_ROOT/users/$name" ]; then uid=$(cat "$GPU_DEV_ROOT/users/$name")\n'
    'else exit 1; fi; [ "$1" = -u ] && echo "$uid"; exit 0',
    # a new account: the next uid, a home made the loosest way (HOME_MODE 0777), owned by it
    "useradd": 'name=${!#}; mkdir -p "$GPU_DEV_ROOT/users" "$GPU_DEV_ROOT/home"\n'
    'uid=$(( 42000 + $(ls "$GPU_DEV_ROOT/users" | wc -l) ))\n'
    'echo "$uid" > "$GPU_DEV_ROOT/users/$name"\n'
    'mkdir -m 777 "$GPU_DEV_ROOT/home/$name"\n'
    '[ "$EUID" != 0 ] || "$REAL_CHOWN" "$uid:$uid" "$GPU_DEV_ROOT/home/$name"',
    "userdel": 'rm -f "$GPU_DEV_ROOT/users/${!#}" && rm -rf "$GPU_DEV_ROOT/home/${!#}"',
    "adduser": "exit 1",
    # as root, the real chown with dev's uid; otherwise owners cannot change (not root)
    "chown": '[ "$EUID" = 0 ] || exit 0; owner=$1; shift\n'
    '[ "$owner" = dev ] && owner=1081:1081; exec "$REAL_CHOWN" "$owner" "$@"',
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
            "REAL_CHOWN": shutil.which("chown") or "/bin/chown",
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
    return _sandbox(tmp_path)


def _sandbox(tmp_path: Path) -> Sandbox:
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
    assert "gpu-dev: starting sshd on port 22" in done.stdout
    assert "sshd -D -e" in sandbox.calls()
    config = sandbox.file("/etc/ssh/sshd_config")
    assert (
        "AuthorizedKeysFile /etc/ssh/authorized_keys/%u /etc/ssh/authorized_keys_nodes/%u\n"
        in config
    )
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


def test_ssh_sessions_get_the_compiler_caches_on_the_personal_share(sandbox: Sandbox):
    """The pod's CCACHE_*/SCCACHE_* (gpudev/cluster/shared_files.py) reach logins and
    commands over SSH, as every other variable the startup script hands on."""
    from gpudev.cluster.shared_files import cache_environment

    caches = cache_environment("20G")
    assert sandbox.run(**caches).returncode == 0
    env = _exported(str(sandbox.root / "etc/profile.d/gpu-dev-env.sh"))
    assert {name: env[name] for name in caches} == caches
    [set_env] = [
        line for line in sandbox.file("/etc/ssh/sshd_config").splitlines() if "SetEnv" in line
    ]
    assert "CCACHE_DIR=/shared-personal/.cache/ccache" in set_env.split()
    assert "SCCACHE_DIR=/shared-personal/.cache/sccache" in set_env.split()


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
        # on a Unix socket in a directory only dev may enter: reached through dev's SSH
        # connection, never over the network, and no collaborator can listen in its place
        assert (
            "--ServerApp.sock=/" in started[0] and "/run/gpu-dev/jupyter/jupyter.sock" in started[0]
        )
        assert "--ip" not in started[0] and "--port" not in started[0]
        assert (sandbox.root / "run/gpu-dev/jupyter").stat().st_mode & 0o777 == 0o700
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


# Collaborators contained (issue #27): the owner's home is dev's alone, a removed user's
# account, keys, sessions and leftovers go. With real uids when the tests run as root.
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="acting as other uids needs root")


@pytest.fixture
def open_sandbox() -> Iterator[Sandbox]:
    """A sandbox every uid can walk into (pytest's tmp_path is root's alone, which would
    refuse any other uid before the script's modes are even tested)."""
    base = Path(tempfile.mkdtemp(prefix="gpu-dev-sandbox-"))
    base.chmod(0o755)
    try:
        yield _sandbox(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _as_user(uid: int, command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-c", command],
        user=uid,
        group=uid,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o7777


@as_root
@pytest.mark.parametrize("home", ["emptyDir", "restored disk"])
def test_a_collaborator_cannot_plant_a_dotfile_in_the_owners_home(open_sandbox: Sandbox, home):
    """The review's finding: `/home/dev` an emptyDir (0777), so gh-alice writes
    ~dev/.bash_profile, run as dev (passwordless sudo) at the owner's next login or when
    the control loop restarts Jupyter with `su - dev`. A named disk restored as the home
    gets the same treatment, whatever mode it was left in."""
    box = open_sandbox
    owners_home, workspace = box.root / "home/dev", box.root / "workspace"
    for directory in (owners_home, workspace, box.root / "dev/shm"):
        directory.mkdir(parents=True)
        directory.chmod(0o777)  # what the kubelet makes of an emptyDir
    if home == "restored disk":
        (owners_home / ".gpu-dev-initialized").write_text("r-0\n")
        (owners_home / ".bashrc").write_text("# the owner's own\n")
        os.chown(owners_home / ".bashrc", OWNER_UID, OWNER_UID)
    assert box.run().returncode == 0
    alice = int(box.file("/users/gh-alice"))
    assert alice >= FIRST_COLLABORATOR_UID

    planted = _as_user(alice, f"echo 'sudo -n true' > {owners_home}/.bash_profile")
    assert planted.returncode != 0 and "Permission denied" in planted.stderr
    assert not (owners_home / ".bash_profile").exists()
    for target in (owners_home / ".bashrc", workspace / "torch.py"):  # imported from cwd
        refused = _as_user(alice, f"echo 'import os' >> {target}")
        assert refused.returncode != 0 and "Permission denied" in refused.stderr
    assert (owners_home.stat().st_uid, _mode(owners_home)) == (OWNER_UID, 0o755)
    assert (workspace.stat().st_uid, _mode(workspace)) == (OWNER_UID, 0o755)
    assert _mode(box.root / "dev/shm") == 0o1777  # shared, but nobody removes another's
    # the owner still writes their own home; the collaborator theirs, which is theirs alone
    assert _as_user(OWNER_UID, f"touch {owners_home}/mine").returncode == 0
    alices_home = box.root / "home/gh-alice"
    assert (alices_home.stat().st_uid, _mode(alices_home)) == (alice, 0o700)
    assert _as_user(alice, f"touch {alices_home}/notes").returncode == 0
    assert _as_user(OWNER_UID, f"ls {alices_home}").returncode != 0
    if home == "restored disk":
        assert (owners_home / ".bashrc").read_text() == "# the owner's own\n"


def test_the_homes_modes_are_set_before_anything_else_runs():
    """Before apt-get, the dev account, the dotfiles, the control loop or sshd."""
    script = objects.startup_script()
    first = script.index('chmod 755 "$ROOT/home/dev" "$ROOT/workspace"')
    for later in ("missing=()", "useradd", "su dev", "gpu-dev-control", 'sshd)" -D'):
        assert first < script.index(later), later


def _control(box: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    """The control loop (once, or `--watch`), as the startup script installed it."""
    return subprocess.run(
        [str(box.root / "usr/local/bin/gpu-dev-control"), *args],
        env={
            "PATH": str(box.bin),
            "GPU_DEV_ROOT": str(box.root),
            "REAL_INSTALL": shutil.which("install") or "/usr/bin/install",
            "REAL_CHOWN": shutil.which("chown") or "/bin/chown",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_removed_user_loses_keys_account_and_home(sandbox: Sandbox):
    keys = {**KEYS, "user.gh-bob": "ssh-ed25519 AAAAbob bob\n"}
    sandbox.mount(CONTROL, keys)
    assert sandbox.run().returncode == 0
    assert sandbox.exists("/etc/ssh/authorized_keys/gh-bob")

    sandbox.mount(CONTROL, {k: v for k, v in keys.items() if k != "user.gh-alice"})
    assert _control(sandbox).returncode == 0
    assert not sandbox.exists("/etc/ssh/authorized_keys/gh-alice")
    assert not sandbox.exists("/users/gh-alice") and not sandbox.exists("/home/gh-alice")
    assert "userdel -r -- gh-alice" in sandbox.calls()
    # the others stay: the owner and bob
    assert sandbox.file("/etc/ssh/authorized_keys/dev") == KEYS["authorized_keys"]
    assert sandbox.file("/etc/ssh/authorized_keys/gh-bob") == "ssh-ed25519 AAAAbob bob\n"
    assert sandbox.exists("/users/gh-bob")
    assert not any(c.startswith("userdel") and "gh-bob" in c for c in sandbox.calls())


def test_an_account_whose_removal_did_not_finish_is_removed_at_the_next_pass(
    sandbox: Sandbox,
):
    """Its key file went with the first try, but userdel refused (a process outlived the
    kills): the account, still in /etc/passwd, is tried again until it is gone."""
    sandbox.mount(CONTROL, KEYS)
    assert sandbox.run().returncode == 0
    (sandbox.root / "users" / "gh-ghost").write_text("1500")
    (sandbox.root / "etc" / "passwd").write_text(
        "root:x:0:0::/root:/bin/bash\ngh-ghost:x:1500:1500::/home/gh-ghost:/bin/bash\n"
    )
    assert _control(sandbox).returncode == 0
    assert "userdel -r -- gh-ghost" in sandbox.calls()
    assert "userdel -r -- root" not in sandbox.calls()
    assert not any("gh-alice" in c and c.startswith("userdel") for c in sandbox.calls())


def test_keys_deleted_on_github_leave_the_account_with_none(sandbox: Sandbox):
    """The lifecycle writes the empty answer; the loop installs it: no key opens it."""
    assert sandbox.run().returncode == 0
    sandbox.mount(CONTROL, {**KEYS, "user.gh-alice": ""})
    assert _control(sandbox).returncode == 0
    assert sandbox.file("/etc/ssh/authorized_keys/gh-alice") == ""
    assert sandbox.exists("/users/gh-alice")


def test_the_watching_loop_removes_a_user_who_had_no_keys(sandbox: Sandbox):
    """Taking off a user with an empty entry changes no key: the loop also compares the
    entries' names, or the account would stay."""
    sandbox.mount(CONTROL, {**KEYS, "user.gh-bob": ""})
    assert sandbox.run().returncode == 0
    assert sandbox.exists("/users/gh-bob")
    # the loop's first pause: the Secret changes under it (the kubelet's update); its second
    # pause ends the test
    sandbox.stub(
        "sleep",
        'done="$GPU_DEV_ROOT/slept"; [ -e "$done" ] && exit 1; touch "$done"\n'
        'rm -f "$GPU_DEV_ROOT/etc/gpu-dev/keys/user.gh-bob"',
    )
    slept = sandbox.calls().count("sleep 5")  # the boot's own loop: ended at its first
    watched = _control(sandbox, "--watch")
    assert watched.returncode == 0 and watched.stderr == "", watched.stderr
    assert sandbox.calls().count("sleep 5") == slept + 2  # applied once more, then ended
    assert not sandbox.exists("/users/gh-bob")
    assert "userdel -r -- gh-bob" in sandbox.calls()


@as_root
def test_a_removed_users_sessions_end_and_their_leftovers_go(open_sandbox: Sandbox):
    """Their processes (an SSH session, a tmux, a job) are killed by uid; the owner's run on;
    what they left in the world-writable places goes, so no later account given the same
    uid inherits it."""
    box = open_sandbox
    assert box.run().returncode == 0
    alice = int(box.file("/users/gh-alice"))
    session = subprocess.Popen(
        ["sleep", "120"], user=alice, group=alice, extra_groups=[], start_new_session=True
    )
    owners = subprocess.Popen(["sleep", "120"])
    tmp = box.root / "tmp"
    tmp.mkdir(mode=0o1777)
    tmp.chmod(0o1777)
    left = _as_user(alice, f"echo data > {tmp}/alices && echo x > {tmp}/its-mine")
    assert left.returncode == 0, left.stderr
    (tmp / "owners").write_text("kept\n")
    try:
        box.mount(CONTROL, {k: v for k, v in KEYS.items() if k != "user.gh-alice"})
        assert _control(box).returncode == 0
        assert session.wait(timeout=10) == -signal.SIGKILL
        assert owners.poll() is None
        assert sorted(os.listdir(tmp)) == ["owners"]
        assert not box.exists("/etc/ssh/authorized_keys/gh-alice")
        assert not box.exists("/home/gh-alice")
    finally:
        for process in (session, owners):
            process.kill()
            process.wait()


def test_with_the_deployments_tools_an_image_without_sshd_sudo_or_bash_installs_nothing(
    sandbox: Sandbox, tmp_path: Path
):
    """cluster/pod_tools.py: the tools' bin comes after the image's PATH and fills what the
    image lacks, so nothing is fetched at boot; sudo gets its main file, sshd its privilege
    separation account, dev the tools' bash as login shell (the image has no /bin/bash)."""
    tools = tmp_path / "tools"
    (tools / "bin").mkdir(parents=True)
    for name in ("sshd", "sudo", "ssh-keygen"):  # the image lacks them: only the tools have
        (sandbox.bin / name).rename(tools / "bin" / name)
    sandbox.stub(  # a new image: no dev account until the script makes it
        "id",
        'name=${!#}; [ -e "$GPU_DEV_ROOT/users/$name" ] || exit 1\n'
        '[ "$1" = -u ] && cat "$GPU_DEV_ROOT/users/$name"; exit 0',
    )
    done = sandbox.run(GPU_DEV_TOOLS=str(tools))
    assert done.returncode == 0, done.stderr
    calls = sandbox.calls()
    assert not any(c.startswith("apt-get") for c in calls), "nothing installed at boot"
    assert "sshd -D -e" in calls  # the tools' sshd (its stub logs the same way)
    assert f"useradd -m -u 1081 -s {tools}/bin/bash dev" in calls
    assert "useradd -r -M -d /var/empty -s /sbin/nologin sshd" in calls
    assert sandbox.file("/etc/sudoers") == "root ALL=(ALL:ALL) ALL\n@includedir /etc/sudoers.d\n"
    assert sandbox.exists("/var/empty")
    assert "Subsystem sftp internal-sftp\n" in sandbox.file("/etc/ssh/sshd_config")
    profile = _exported(str(sandbox.root / "etc/profile.d/gpu-dev-env.sh"))
    assert profile["PATH"] == f"{sandbox.bin}:{tools}/bin"  # the image's own commands first


def test_without_the_tools_an_image_lacking_sshd_still_gets_it_from_apt_get(sandbox: Sandbox):
    (sandbox.bin / "sshd").unlink()
    done = sandbox.run()
    assert any(c.startswith("apt-get install") for c in sandbox.calls())
    assert "Subsystem sftp" not in (
        sandbox.file("/etc/ssh/sshd_config") if sandbox.exists("/etc/ssh/sshd_config") else ""
    )
    assert done.returncode != 0  # the apt-get stub installs nothing: the script says why
    assert "no sshd in this image" in done.stderr


STEP_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ gpu-dev: (.+)$")


def _steps(stdout: str) -> list[str]:
    return [m[1] for m in map(STEP_LINE.match, stdout.splitlines()) if m]


def test_each_start_up_step_is_a_timestamped_line_on_stdout(sandbox: Sandbox):
    """What `gpu-dev logs` shows of a start (docs/logs.md): the user, the home's first use,
    the keys, Jupyter on node 0, sshd; a second boot on the same home says it was kept."""
    sandbox.stub("jupyter-lab", "exit 0")
    sandbox.mount({**CONTROL, "jupyter": "true"}, KEYS)
    done = sandbox.run()
    assert done.returncode == 0, done.stderr
    assert _steps(done.stdout) == [
        "starting the dev server (node 0)",
        "disk first use: default dotfiles copied to the home directory",
        "installing the SSH keys",
        "starting Jupyter",
        "starting sshd on port 22 (ready when it prints: Server listening)",
    ]
    sandbox.mount(CONTROL, KEYS)
    again = _steps(sandbox.run().stdout)
    assert "home directory set up by an earlier reservation (kept on the disk)" in again
    assert "starting Jupyter" not in again


def test_a_new_image_says_it_creates_the_user(sandbox: Sandbox):
    sandbox.stub("id", "exit 1")  # no dev in the image yet
    assert "creating the user dev" in _steps(sandbox.run().stdout)


def test_a_missing_package_and_a_missing_jupyter_are_steps_too(sandbox: Sandbox):
    (sandbox.bin / "sudo").unlink(missing_ok=True)
    sandbox.mount({**CONTROL, "jupyter": "true"}, KEYS)
    steps = _steps(sandbox.run().stdout)
    assert "installing sudo (the dev image has them: deploy/dev-image)" in steps
    assert "Jupyter is not in this image (no jupyter-lab)" in steps


# The personal share (issue #34 review): its access point makes every NFS request as dev, so
# the share is kept from added users by a local parent only dev can enter.
def _kubelet_mounts_the_share(box: Sandbox) -> Path:
    """What the kubelet leaves: the mount point's parents made by the runtime (root's,
    0755) and the share, which answers every uid as dev (as 0777 stands for here)."""
    share = box.root / "run/gpu-dev/share/mnt"
    share.mkdir(parents=True)
    share.chmod(0o777)
    (box.root / "run/gpu-dev/share").chmod(0o755)
    return share


def test_the_personal_share_is_reached_through_a_directory_only_dev_can_enter(
    sandbox: Sandbox,
):
    from gpudev.cluster.shared_files import MOUNT_PATH, POD_MOUNT_PATH, SHARE_PARENT

    _kubelet_mounts_the_share(sandbox)
    assert sandbox.run().returncode == 0
    parent = sandbox.root / SHARE_PARENT.lstrip("/")
    assert _mode(parent) == 0o700
    if os.geteuid() == 0:
        assert parent.stat().st_uid == OWNER_UID
    link = sandbox.root / MOUNT_PATH.lstrip("/")
    assert link.is_symlink() and os.readlink(link) == POD_MOUNT_PATH


def test_a_pod_without_the_share_gets_no_shared_personal_link(sandbox: Sandbox):
    assert sandbox.run().returncode == 0
    assert not os.path.lexists(sandbox.root / "shared-personal")


@as_root
def test_a_collaborator_cannot_read_or_write_the_owners_share(open_sandbox: Sandbox):
    """The review's finding: the access point sends gh-alice's requests as dev too, so the
    share's own 0700 let her read the owner's files and poison the owner's ccache."""
    box = open_sandbox
    share = _kubelet_mounts_the_share(box)
    (share / "checkpoint.pt").write_text("weights")
    os.chown(share / "checkpoint.pt", OWNER_UID, OWNER_UID)
    assert box.run().returncode == 0
    alice = int(box.file("/users/gh-alice"))
    link = share  # /shared-personal's target, inside the sandbox
    for command in (f"cat {link}/checkpoint.pt", f"mkdir -p {link}/.cache/ccache/0"):
        refused = _as_user(alice, command)
        assert refused.returncode != 0 and "Permission denied" in refused.stderr
    assert not (share / ".cache").exists()
    assert _as_user(OWNER_UID, f"cat {link}/checkpoint.pt").stdout == "weights"


def _docker_stubs(sandbox: Sandbox) -> None:
    """groupadd writes the group into the sandbox's /etc/group; usermod only records."""
    sandbox.stub("groupadd", 'echo "${!#}:x:$2:" >> "$GPU_DEV_ROOT/etc/group"')
    sandbox.stub("usermod", "exit 0")


DOCKER_ENV = {
    "DOCKER_HOST": "unix:///run/gpu-dev-docker/docker.sock",
    "GPU_DEV_DOCKER_GID": "2375",
}


def test_with_docker_dev_joins_the_sockets_group_and_sessions_get_docker_host(
    sandbox: Sandbox,
):
    """`reserve --docker` (cluster/pod_docker.py): a group with the socket's gid is made
    and dev joins it; DOCKER_HOST and the copied client's directory (last on PATH) reach
    logins and commands over SSH."""
    _docker_stubs(sandbox)
    cli = sandbox.root / "opt/gpu-dev-docker/bin"
    cli.mkdir(parents=True)
    plugins = sandbox.root / "opt/gpu-dev-docker/cli-plugins"
    plugins.mkdir()
    done = sandbox.run(
        **DOCKER_ENV, GPU_DEV_DOCKER_CLI=str(cli), GPU_DEV_DOCKER_PLUGINS=str(plugins)
    )
    assert done.returncode == 0, done.stderr
    assert "command not found" not in done.stderr
    assert "groupadd -g 2375 gpu-dev-docker" in sandbox.calls()
    assert "usermod -aG gpu-dev-docker dev" in sandbox.calls()
    env = _exported(str(sandbox.root / "etc/profile.d/gpu-dev-env.sh"))
    assert env["DOCKER_HOST"] == DOCKER_ENV["DOCKER_HOST"]
    assert env["PATH"] == f"{sandbox.bin}:{cli}"
    [set_env] = [
        line for line in sandbox.file("/etc/ssh/sshd_config").splitlines() if "SetEnv" in line
    ]
    assert f"DOCKER_HOST={DOCKER_ENV['DOCKER_HOST']}" in set_env.split()
    # compose and buildx where the client looks for plugins
    linked = sandbox.root / "usr/local/libexec/docker/cli-plugins"
    assert linked.is_symlink() and linked.resolve() == plugins.resolve()


def test_with_docker_an_images_own_group_of_that_gid_is_joined_not_made_again(
    sandbox: Sandbox,
):
    _docker_stubs(sandbox)
    (sandbox.root / "etc/group").write_text("root:x:0:\ndocker:x:2375:\n")
    own = sandbox.root / "usr/local/libexec/docker/cli-plugins"  # the image's own plugins
    own.mkdir(parents=True)
    plugins = sandbox.root / "opt/gpu-dev-docker/cli-plugins"
    plugins.mkdir(parents=True)
    assert sandbox.run(**DOCKER_ENV, GPU_DEV_DOCKER_PLUGINS=str(plugins)).returncode == 0
    assert not own.is_symlink()
    assert not [c for c in sandbox.calls() if c.startswith("groupadd")]
    assert "usermod -aG docker dev" in sandbox.calls()


def test_without_docker_no_group_is_made_and_sessions_get_no_docker_host(sandbox: Sandbox):
    _docker_stubs(sandbox)
    assert sandbox.run().returncode == 0
    assert not [c for c in sandbox.calls() if c.startswith(("groupadd", "usermod"))]
    assert "DOCKER_HOST" not in _exported(str(sandbox.root / "etc/profile.d/gpu-dev-env.sh"))


# The team share (docs/shared-files.md "The team share"): under the same dev-only parent.
def test_the_team_share_is_linked_from_shared_through_the_same_parent(sandbox: Sandbox):
    from gpudev.cluster.shared_files import SHARE_PARENT
    from gpudev.cluster.team_share import MOUNT_PATH, POD_MOUNT_PATH

    team = sandbox.root / POD_MOUNT_PATH.lstrip("/")
    team.mkdir(parents=True)
    team.chmod(0o777)
    (sandbox.root / SHARE_PARENT.lstrip("/")).chmod(0o755)
    assert sandbox.run().returncode == 0
    assert _mode(sandbox.root / SHARE_PARENT.lstrip("/")) == 0o700
    link = sandbox.root / MOUNT_PATH.lstrip("/")
    assert link.is_symlink() and os.readlink(link) == POD_MOUNT_PATH
    assert not os.path.lexists(sandbox.root / "shared-personal")  # no personal share here


def test_a_pod_without_the_team_share_gets_no_shared_link(sandbox: Sandbox):
    assert sandbox.run().returncode == 0
    assert not os.path.lexists(sandbox.root / "shared")
