"""The local cloud's h100 nodes (the EFA group: several network interfaces, so no public
address at launch) get an Elastic IP from the availability updater, the stand-in reports it
as the node's ExternalIP (as the EKS cloud controller does), and a single-GPU h100
reservation's connect line uses it; another run allocates nothing more
(gpudev/cluster/addresses.py, docs/multinode.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from gpudev.cluster.addresses import INSTANCE_TAG
from gpudev_cli.main import cli
from tests.lifecycle.helpers import cancel, reserve, wait_for_status
from tests.lifecycle.test_node_endpoints import _ssh_resolves
from tests.support.waiting import wait_for

EVENT = json.loads(
    (
        Path(__file__).resolve().parents[2] / "events" / "availability_updater" / "scheduled.json"
    ).read_text()
)


def _update_availability(cloud: Any) -> dict[str, Any]:
    invocation = cloud.lambdas.invoke("AvailabilityUpdater", EVENT)
    assert not invocation.errored, invocation.payload
    return dict(invocation.payload)


def _h100_external_ips(cloud: Any) -> dict[str, str | None]:
    nodes = cloud.kubernetes.store.list("nodes", None, "GpuType=h100")["items"]
    return {
        node["metadata"]["name"]: next(
            (a["address"] for a in node["status"]["addresses"] if a["type"] == "ExternalIP"),
            None,
        )
        for node in nodes
    }


def _tagged_addresses(cloud: Any) -> dict[str, str]:
    """instance id → the public IP of the address tagged for it and associated."""
    reply = cloud.aws.client("ec2").describe_addresses(
        Filters=[{"Name": "tag-key", "Values": [INSTANCE_TAG]}]
    )
    return {
        {t["Key"]: t["Value"] for t in a["Tags"]}[INSTANCE_TAG]: a["PublicIp"]
        for a in reply["Addresses"]
        if a.get("AssociationId")
    }


def test_an_h100_node_gets_an_elastic_ip_and_a_one_gpu_reservation_connects_through_it(
    api, local_cloud, tmp_path, monkeypatch
):
    # this test's runs alone (the schedule's run in flight, if any, ends first): a run that
    # finds another at the addresses skips them
    local_cloud.ticker.pause("AvailabilityUpdater")
    first = _update_availability(local_cloud)["statistics"]
    assert first["address_actions_failed"] == 0
    tagged = _tagged_addresses(local_cloud)
    nodes = _h100_external_ips(local_cloud)
    assert nodes and set(nodes) == set(tagged), "one address per EFA node"
    wait_for(lambda: _h100_external_ips(local_cloud) == tagged, timeout=30)

    again = _update_availability(local_cloud)["statistics"]
    assert (again["addresses_allocated"], again["addresses_associated"]) == (0, 0)
    described = local_cloud.aws.client("ec2").describe_addresses()["Addresses"]
    assert len(described) == len(nodes), "a second run allocates nothing more"

    rid = reserve(api, gpu_type="h100", gpu_count=1, hours=0.5)["reservation_id"]
    # the allocator's node sync records the node's ExternalIP: the grant's node is reached
    # there (wait: its pass may have read the nodes before the stand-in reported the address)
    active = wait_for_status(api, rid, "active", timeout=60)
    assert active["node_address_kind"] == "external"
    assert active["node_ip"] in tagged.values()
    assert active["ssh_command"] == f"ssh -p {active['node_port']} dev@{active['node_ip']}"

    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(local_cloud.credentials_file))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GPU_DEV_HOME", str(tmp_path / "gpu-dev"))
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    options = ["--profile", "alice", "--region", "us-east-2"]
    options += ["--api-url", local_cloud.describe()["api_url"]]
    shown = CliRunner().invoke(cli, [*options, "show", rid[:8]], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    # `gpu-dev connect`'s ssh config: OpenSSH resolves the alias to the Elastic IP
    config = str(tmp_path / "gpu-dev" / f"{rid[:8]}-sshconfig")
    resolved = _ssh_resolves(config, f"gpu-dev-{rid[:8]}")
    assert (resolved["hostname"], resolved["port"]) == (
        active["node_ip"],
        str(active["node_port"]),
    )
    cancel(api, rid)
