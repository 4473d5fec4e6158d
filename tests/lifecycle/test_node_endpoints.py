"""Every node of a multinode reservation is reachable on its own SSH endpoint (a NodePort
Service per rank, selecting that rank's pod), the API's view carries each node's, and every
one is torn down at the end; an added user GitHub lists no keys for is named on the row."""

from __future__ import annotations

import shutil
import subprocess

from click.testing import CliRunner

from gpudev.cluster.vocabulary import RANK_LABEL, RESERVATION_LABEL
from gpudev_cli.main import cli
from tests.lifecycle.helpers import (
    assert_nothing_left,
    cancel,
    objects_of,
    reserve,
    show,
    wait_for_status,
)
from tests.support.waiting import wait_for


def _ssh_resolves(config: str, alias: str) -> dict[str, str]:
    """What OpenSSH would use for `alias` (`ssh -G`: no connection)."""
    ssh = shutil.which("ssh")
    assert ssh is not None
    out = subprocess.run(
        [ssh, "-G", "-F", config, alias], capture_output=True, text=True, check=True, timeout=30
    ).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def test_each_node_of_a_multinode_reservation_has_its_own_ssh_endpoint(
    api, local_cloud, tmp_path, monkeypatch
):
    rid = reserve(api, gpu_type="h100", gpu_count=16, hours=0.5)["reservation_id"]
    active = wait_for_status(api, rid, "active", timeout=60)
    objects = objects_of(local_cloud, rid)
    ssh_services = {
        s["metadata"]["name"]: s for s in objects["services"] if s["spec"].get("type") == "NodePort"
    }
    assert sorted(ssh_services) == [f"gpu-dev-{rid[:8]}-ssh", f"gpu-dev-{rid[:8]}-ssh-1"]
    node_of_rank = {
        p["metadata"]["labels"][RANK_LABEL]: p["spec"]["nodeName"] for p in objects["pods"]
    }
    assert len(set(node_of_rank.values())) == 2
    ports = {}
    for service in ssh_services.values():
        selector = service["spec"]["selector"]
        rank = selector[RANK_LABEL]
        assert selector[RESERVATION_LABEL] == rid
        assert service["spec"]["externalTrafficPolicy"] == "Local"
        ports[int(rank)] = service["spec"]["ports"][0]["nodePort"]
    assert len(set(ports.values())) == 2, "each node its own NodePort"
    nodes = active["ssh_nodes"]
    assert [n["rank"] for n in nodes] == [0, 1]
    assert {n["rank"]: n["node_port"] for n in nodes} == ports
    assert all(n["node_ip"] for n in nodes) and nodes[0]["node_ip"] != nodes[1]["node_ip"]
    # node 0's endpoint is also the reservation's, as before
    assert (active["node_ip"], active["node_port"]) == (nodes[0]["node_ip"], nodes[0]["node_port"])
    # the real CLI: `show` says every node is ready, one connect line each, and writes one
    # Host per node, pinned to the reservation's host key
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(local_cloud.credentials_file))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GPU_DEV_HOME", str(tmp_path / "gpu-dev"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    options = ["--profile", "alice", "--region", "us-east-2"]
    options += ["--api-url", local_cloud.describe()["api_url"]]
    shown = CliRunner().invoke(cli, [*options, "show", rid[:8]], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    assert "2/2 nodes ready" in shown.stdout
    assert "Node 0:" in shown.stdout and "Node 1:" in shown.stdout
    config = str(tmp_path / "gpu-dev" / f"{rid[:8]}-sshconfig")
    for node in nodes:
        alias = f"gpu-dev-{rid[:8]}" + (f"-node{node['rank']}" if node["rank"] else "")
        resolved = _ssh_resolves(config, alias)
        assert (resolved["hostname"], resolved["port"]) == (node["node_ip"], str(node["node_port"]))
        assert resolved["hostkeyalias"] == f"gpu-dev-{rid[:8]}"
        assert resolved["stricthostkeychecking"] == "true"
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    assert_nothing_left(local_cloud, rid)  # every node's Service included


def test_an_added_user_without_github_keys_is_named_until_they_add_one(api, local_cloud):
    rid = reserve(api, github_user="alice")["reservation_id"]
    wait_for_status(api, rid, "active")
    for user in ("octocat", "nokeys-person"):
        reply = api.call("POST", f"/v1/reservations/{rid}/users", body={"github_username": user})
        assert reply.status == 202, reply.body
    shown = wait_for(
        lambda: (r := show(api, rid))["keyless_users"] and r,
        message="the keyless user recorded",
    )
    assert shown["keyless_users"] == ["nokeys-person"]
    assert sorted(shown["secondary_users"]) == ["nokeys-person", "octocat"]
