"""`gpu-dev reserve -t h100 -g 16 --distributed` (the real CLI) on the local cloud's h100s
(p5.48xlarge, one zone and placement group: localcloud/cluster.json): both pods request the
nodes' EFA interfaces and carry EFA's environment, both nodes share a zone and a placement
group, both pods mount the reservation's own key pair and the nodes' ConfigMap (hostfile,
ssh config, gpu-dev-run), and the ssh config written to the pods resolves `node-1` to its
pod (docs/multinode.md)."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from gpudev.cluster.vocabulary import EFA_RESOURCE, PLACEMENT_GROUP_LABEL, ZONE_LABEL
from gpudev_cli.main import cli
from tests.lifecycle.helpers import (
    assert_nothing_left,
    cancel,
    objects_of,
    secret_data,
    wait_for_status,
)


def _cli_reserve(local_cloud, tmp_path, monkeypatch) -> str:  # type: ignore[no-untyped-def]
    """`gpu-dev reserve -t h100 -g 16 --distributed` with the real CLI, as alice."""
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(local_cloud.credentials_file))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GPU_DEV_HOME", str(tmp_path / "gpu-dev"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    options = ["--profile", "alice", "--region", "us-east-2"]
    options += ["--api-url", local_cloud.describe()["api_url"], "-o", "json"]
    reserve = ["reserve", "-t", "h100", "-g", "16", "--distributed", "-h", "0.5"]
    reserve += ["--github-user", "alice", "--no-wait"]
    made = CliRunner().invoke(cli, [*options, *reserve], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    return str(json.loads(made.stdout)["reservation_id"])


def test_a_distributed_h100_reservation_gets_efa_one_fabric_and_the_nodes_key(
    api, local_cloud, tmp_path, monkeypatch
):
    rid = _cli_reserve(local_cloud, tmp_path, monkeypatch)
    wait_for_status(api, rid, "active", timeout=60)
    objects = objects_of(local_cloud, rid)
    base = f"gpu-dev-{rid[:8]}"

    pods = objects["pods"]
    assert len(pods) == 2
    for pod in pods:
        container = pod["spec"]["containers"][0]
        assert container["resources"]["requests"][EFA_RESOURCE] == "32"
        assert container["resources"]["limits"][EFA_RESOURCE] == "32"
        env = {e["name"]: e["value"] for e in container["env"]}
        assert (env["FI_PROVIDER"], env["FI_EFA_USE_DEVICE_RDMA"]) == ("efa", "1")
        volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
        assert volumes["nodes"]["configMap"]["name"] == f"{base}-nodes"
        assert volumes["node-key"]["secret"]["secretName"] == f"{base}-nodes"
        mounts = {m["mountPath"] for m in container["volumeMounts"]}
        assert {"/etc/gpu-dev/nodes", "/etc/gpu-dev/node-key"} <= mounts

    store = local_cloud.kubernetes.store
    nodes = [store.get("nodes", "", pod["spec"]["nodeName"]) for pod in pods]
    labels = [node["metadata"]["labels"] for node in nodes]
    assert len({n["metadata"]["name"] for n in nodes}) == 2
    assert len({label[ZONE_LABEL] for label in labels}) == 1
    assert {label[PLACEMENT_GROUP_LABEL] for label in labels} == {"gpudev-h100-efa"}

    (config_map,) = [c for c in objects["configmaps"] if c["metadata"]["name"] == f"{base}-nodes"]
    assert config_map["data"]["hostfile"] == "node-0 slots=8\nnode-1 slots=8\n"
    (key,) = [s for s in objects["secrets"] if s["metadata"]["name"] == f"{base}-nodes"]
    entries = secret_data(key)
    assert entries["id_ed25519"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert entries["id_ed25519.pub"].startswith("ssh-ed25519 ")

    if shutil.which("ssh") is None:
        pytest.skip("needs the OpenSSH client")
    config = tmp_path / "gpu-dev-nodes.conf"
    config.write_text(config_map["data"]["ssh_config"])
    resolved = dict(
        line.split(" ", 1)
        for line in subprocess.run(
            ["ssh", "-G", "-F", str(config), "node-1"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout.splitlines()
        if " " in line
    )
    assert resolved["hostname"] == f"{base}-1.{base}-headless"
    assert resolved["user"] == "dev"
    assert resolved["hostkeyalias"] == f"{base}-nodes"

    cancel(api, rid)
    wait_for_status(api, rid, "cancelled", timeout=60)
    assert_nothing_left(local_cloud, rid)  # the key pair goes with the rest
