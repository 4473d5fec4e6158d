"""Ready means usable: every pod of a reservation carries a readiness probe on its SSH port,
so the kubelet marks it Ready (and the lifecycle makes the reservation active) only once
sshd answers."""

from __future__ import annotations

import pytest

from gpudev.cluster import objects
from gpudev.cluster.names import Placement
from tests.unit.test_manifest_drift import _catalogue, _reservation

T4 = next(t for t in _catalogue() if t.gpu_type == "t4")


@pytest.mark.parametrize("rank", [0, 1])
def test_every_pod_probes_its_ssh_port_for_readiness(rank: int):
    reservation = _reservation("alice", T4, T4.max_gpus * 2, 2)
    pod = objects.pod(reservation, T4, Placement(rank, "i-0abc", "10.0.0.1", T4.max_gpus), "img")
    (container,) = pod["spec"]["containers"]
    probe = container["readinessProbe"]
    assert probe["tcpSocket"] == {"port": "ssh"}
    (ssh,) = [p for p in container["ports"] if p["name"] == "ssh"]
    assert ssh["containerPort"] == 22
    assert probe["periodSeconds"] > 0 and probe["failureThreshold"] >= 1
    assert probe["timeoutSeconds"] < probe["periodSeconds"]
