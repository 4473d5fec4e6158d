"""A multinode reservation's pod setup (`gpudev/cluster/node_setup.sh`, sourced by
startup.sh) and its launcher (`gpu_dev_run.sh`), run for real under bash in the startup
script's sandbox (test_startup_sandbox.py): dev's key between the pods, the hostfile, the
ssh config, EFA's libraries on LD_LIBRARY_PATH, and gpu-dev-run on every node."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpudev.cluster import node_access, objects
from gpudev.cluster.fabric import PLUGIN_PATH
from gpudev.cluster.host_keys import new_host_key
from tests.unit.test_manifest_drift import _catalogue, _reservation
from tests.unit.test_startup_sandbox import Sandbox, _exported, _sandbox

H100 = next(t for t in _catalogue() if t.gpu_type == "h100")
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return _sandbox(tmp_path)


def _mount_nodes(sandbox: Sandbox, nodes: int = 2) -> dict[str, str]:
    reservation = _reservation("alice", H100, 8 * nodes, nodes)
    config = objects.nodes_config_map(reservation, 8, new_host_key().public)["data"]
    secret = objects.nodes_secret(reservation, node_access.new_node_key())["stringData"]
    for folder, entries in (("nodes", config), ("node-key", secret)):
        directory = sandbox.root / "etc/gpu-dev" / folder
        directory.mkdir(parents=True)
        for key, value in entries.items():
            (directory / key).write_text(value)
    return {**config, **secret}


def test_a_multinode_pod_installs_the_nodes_key_hostfile_ssh_config_and_launcher(sandbox):
    mounted = _mount_nodes(sandbox)
    (sandbox.root / "opt/amazon/ofi-nccl/lib").mkdir(parents=True)

    done = sandbox.run(GPU_DEV_OFI_NCCL_PATH=PLUGIN_PATH)

    assert done.returncode == 0, done.stderr
    assert sandbox.file("/etc/gpu-dev/hostfile") == "node-0 slots=8\nnode-1 slots=8\n"
    assert sandbox.file("/run/gpu-dev/nodes/id_ed25519") == mounted["id_ed25519"]
    assert (sandbox.root / "run/gpu-dev/nodes/id_ed25519").stat().st_mode & 0o077 == 0
    assert sandbox.file("/etc/ssh/authorized_keys_nodes/dev") == mounted["id_ed25519.pub"]
    assert sandbox.file("/etc/ssh/ssh_config.d/gpu-dev-nodes.conf") == mounted["ssh_config"]
    assert "Include /etc/ssh/ssh_config.d/gpu-dev-nodes.conf" in sandbox.file("/etc/ssh/ssh_config")
    assert sandbox.exists("/usr/local/bin/gpu-dev-run")
    # the plugin directory the image has (only that one) reaches SSH sessions first
    env = _exported(str(sandbox.root / "etc/profile.d/gpu-dev-env.sh"))
    assert env["LD_LIBRARY_PATH"] == "/opt/amazon/ofi-nccl/lib:/usr/local/nvidia/lib64"


def test_a_single_node_pod_gets_none_of_it(sandbox):
    done = sandbox.run()

    assert done.returncode == 0, done.stderr
    assert not sandbox.exists("/etc/gpu-dev/hostfile")
    assert not sandbox.exists("/etc/ssh/authorized_keys_nodes/dev")


# ssh as the launcher uses it, the "remote" command run here: options are read (`-tt`
# noted), the host named in the calls log, a `failing` host exits 3, and a `no_dir` host
# sees the launcher's directory under another path (a node without it). The command runs
# in a session of its own, as under sshd; with `-tt` the connection closing (this ssh
# ended) hangs it up, as sshd hangs up a pty; without, it runs on, as it would.
SSH_STUB = """tty=0
while [ "${1#-}" != "$1" ]; do [ "$1" = -tt ] && tty=1; shift; done
host=$1; shift
[ "$host" = "{failing}" ] && exit 3
remote="$*"
[ "$host" = "{no_dir}" ] && remote=${remote//$PWD/$PWD/not-on-this-node}
setsid bash -c "$remote" &
child=$!
[ "$tty" = 1 ] && trap 'kill -HUP -- -$child 2>/dev/null; exit 129' INT TERM HUP
wait "$child"
"""


def _launcher_command(
    sandbox: Sandbox, tmp_path: Path, failing: str = "", no_dir: str = ""
) -> dict[str, Any]:
    """gpu-dev-run's arguments for subprocess, with the ssh stub (SSH_STUB) on its PATH."""
    _mount_nodes(sandbox, nodes=3)
    hostfile = sandbox.root / "etc/gpu-dev/nodes/hostfile"
    sandbox.stub("ssh", SSH_STUB.replace("{failing}", failing).replace("{no_dir}", no_dir))
    for tool in ("sed", "dirname", "setsid"):
        (sandbox.bin / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    return {
        "args": ["bash", str(node_access.LAUNCHER_SCRIPT)],
        "env": {
            "PATH": str(sandbox.bin),
            "GPU_DEV_ROOT": str(sandbox.root),
            "GPU_DEV_HOSTFILE": str(hostfile),
        },
        "cwd": tmp_path,
    }


def _launcher(
    sandbox: Sandbox, tmp_path: Path, *command: str, failing: str = "", no_dir: str = ""
) -> subprocess.CompletedProcess[str]:
    launch = _launcher_command(sandbox, tmp_path, failing, no_dir)
    return subprocess.run(
        [*launch.pop("args"), *command],
        **launch,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_gpu_dev_run_runs_the_command_on_every_node_with_its_rank(sandbox, tmp_path):
    done = _launcher(sandbox, tmp_path, "sh", "-c", 'echo "rank $NODE_RANK in $(pwd)"')

    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == [
        f"[node-{rank}] rank {rank} in {tmp_path}" for rank in range(3)
    ]


def test_gpu_dev_run_fails_with_a_failing_nodes_status_and_says_which(sandbox, tmp_path):
    done = _launcher(sandbox, tmp_path, "true", failing="node-1")

    assert done.returncode == 3
    assert "gpu-dev-run: node-1 exited with status 3" in done.stderr


def test_gpu_dev_run_on_a_node_without_the_directory_runs_nothing_there_and_exits_97(
    sandbox, tmp_path
):
    done = _launcher(sandbox, tmp_path, "sh", "-c", "echo ran in $(pwd)", no_dir="node-1")

    assert done.returncode == 97
    assert "gpu-dev-run: node-1 exited with status 97" in done.stderr
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith("[node-1] ran")] == []
    assert any(line.startswith("[node-1] gpu-dev-run: no directory") for line in lines)
    assert f"[node-0] ran in {tmp_path}" in lines


def _alive(pid: int) -> bool:
    """Running, and not a zombie left for a parent that is gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _wait_until(condition: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM])
def test_stopping_gpu_dev_run_ends_the_command_on_every_node(sandbox, tmp_path, sent):
    launch = _launcher_command(sandbox, tmp_path)
    sleep = shutil.which("sleep") or "/bin/sleep"  # the sandbox's own sleep ends at once
    job = f'echo $$ > "$GPU_DEV_ROOT/pid-$NODE_RANK"; exec {sleep} 300'
    runs = subprocess.Popen(
        [*launch.pop("args"), "sh", "-c", job],
        **launch,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    pid_files = [sandbox.root / f"pid-{rank}" for rank in range(3)]
    try:
        assert _wait_until(lambda: all(f.exists() and f.read_text().strip() for f in pid_files))
        pids = [int(f.read_text()) for f in pid_files]
        runs.send_signal(sent)  # as Ctrl+C reaches it (its nodes' jobs are groups of their own)
        _, stderr = runs.communicate(timeout=60)
    finally:
        if runs.poll() is None:
            runs.kill()
    assert runs.returncode == 128 + sent, stderr
    assert "gpu-dev-run: stopping it on every node" in stderr
    assert _wait_until(lambda: not any(_alive(pid) for pid in pids)), "a node's command runs on"


def test_gpu_dev_run_without_a_command_says_how_to_use_it(sandbox, tmp_path):
    done = _launcher(sandbox, tmp_path)

    assert done.returncode == 2
    assert "usage: gpu-dev-run CMD" in done.stderr


def test_the_ssh_config_resolves_each_node_alias_to_its_pod(tmp_path):
    if shutil.which("ssh") is None:
        pytest.skip("needs ssh")
    reservation = _reservation("alice", H100, 16, 2).model_copy(
        update={"reservation_id": uuid.UUID(int=7)}
    )
    config = tmp_path / "config"
    config.write_text(node_access.ssh_config(reservation))
    resolved = subprocess.run(
        ["ssh", "-G", "-F", str(config), "node-1"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    base = "gpu-dev-00000000"
    assert f"hostname {base}-1.{base}-headless" in resolved
    assert "user dev" in resolved
    assert f"hostkeyalias {base}-nodes" in resolved
    assert f"identityfile {node_access.INSTALLED_KEY}" in resolved


def test_each_reservation_gets_a_key_pair_of_its_own_that_openssh_reads(tmp_path):
    if shutil.which("ssh-keygen") is None:
        pytest.skip("needs ssh-keygen")
    first, second = node_access.new_node_key(), node_access.new_node_key()
    assert first.public != second.public
    path = tmp_path / "id_ed25519"
    path.write_text(node_access.key_entries(first)["id_ed25519"])
    path.chmod(0o600)
    shown = subprocess.run(
        ["ssh-keygen", "-y", "-f", str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert shown.split()[:2] == first.public.split()[:2]


def test_the_nodes_objects_carry_the_reservations_label_so_tear_down_finds_them():
    reservation = _reservation("alice", H100, 16, 2)
    name = f"gpu-dev-{str(reservation.reservation_id)[:8]}-nodes"
    for manifest in (
        objects.nodes_config_map(reservation, 8, new_host_key().public),
        objects.nodes_secret(reservation, node_access.new_node_key()),
    ):
        labels = manifest["metadata"]["labels"]
        assert labels["gpu-dev/reservation"] == str(reservation.reservation_id)
        assert manifest["metadata"]["name"] == name
