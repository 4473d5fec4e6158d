"""A reservation's pod is isolated by default: RuntimeDefault seccomp, no service-account
token, no privilege escalation, no SYS_ADMIN or IPC_LOCK, and it passes Pod Security
`baseline` as the stand-in enforces it on gpu-dev. Only a profiling reservation gets
SYS_ADMIN (and the dev user sudo), which baseline refuses: it runs in the profiling namespace.
Its NetworkPolicy admits the reservation's own pods and no one else's."""

from __future__ import annotations

from typing import Any

import pytest

from gpudev.cluster import network, objects
from gpudev.cluster.names import Placement
from gpudev.cluster.vocabulary import KINDS, RESERVATION_LABEL
from localcloud.kubernetes import pod_security
from tests.unit.test_manifest_drift import _catalogue, _reservation

T4 = next(t for t in _catalogue() if t.gpu_type == "t4")


def _pod(profiling: bool, nodes: int = 1, profiling_node: bool = False) -> dict[str, Any]:
    reservation = _reservation("alice", T4, T4.max_gpus * nodes, nodes, profiling=profiling)
    placement = Placement(0, "i-0abc", "10.0.0.1", T4.max_gpus, None, profiling_node)
    return objects.pod(reservation, T4, placement, "img")


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = pod["spec"]["containers"][0]
    return container


def _env(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in _container(pod)["env"]}


@pytest.mark.parametrize("profiling", [False, True])
def test_every_pod_runs_under_runtime_default_seccomp_without_a_service_account_token(
    profiling: bool,
):
    spec = _pod(profiling)["spec"]
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert spec["automountServiceAccountToken"] is False
    assert not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC")


def test_an_ordinary_pod_has_no_added_capability_and_may_escalate_for_sudo():
    """dev has passwordless sudo in every pod (a setuid binary: inert under no-new-privs)."""
    pod = _pod(profiling=False)
    context = _container(pod)["securityContext"]
    assert context == {"capabilities": {"drop": ["NET_RAW"]}}
    assert _env(pod)["GPU_DEV_PROFILING"] == "false"


def test_a_profiling_pod_adds_sys_admin_only():
    pod = _pod(profiling=True)
    context = _container(pod)["securityContext"]
    assert context["capabilities"] == {"add": ["SYS_ADMIN"], "drop": ["NET_RAW"]}
    assert "allowPrivilegeEscalation" not in context
    assert _env(pod)["GPU_DEV_PROFILING"] == "true"


def test_an_ordinary_pod_passes_pod_security_baseline_and_a_profiling_one_does_not():
    assert pod_security.violations(_pod(profiling=False)) == []
    assert pod_security.violations(_pod(profiling=False, nodes=2)) == []
    assert pod_security.violations(_pod(profiling=True)) == [
        'non-default capabilities (container "gpu-dev" must not include "SYS_ADMIN" in '
        "securityContext.capabilities.add)"
    ]


def test_the_profiling_namespace_admits_what_gpu_dev_refuses():
    by_name = {ns["metadata"]["name"]: ns for ns in pod_security.namespaces()}
    profiling_pod = _pod(profiling=True)
    refused = pod_security.admit_pod(by_name["gpu-dev"], profiling_pod)
    assert refused is not None and refused.code == 403
    assert pod_security.admit_pod(by_name["gpu-dev-profiling"], profiling_pod) is None


def test_the_network_policy_admits_only_the_reservations_own_pods_both_ways():
    reservation = _reservation("alice", T4, 8, 2)
    policy = network.network_policy(reservation)
    own = {"podSelector": {"matchLabels": {RESERVATION_LABEL: str(reservation.reservation_id)}}}
    assert policy["apiVersion"] == "networking.k8s.io/v1"
    assert policy["metadata"]["labels"][RESERVATION_LABEL] == str(reservation.reservation_id)
    assert policy["spec"] == {
        **own,
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [own]}],
        "egress": [{"to": [own]}],
    }
    assert "networkpolicies" in KINDS  # so tear down deletes it


def test_a_profiling_pod_on_a_dedicated_node_selects_its_label_and_tolerates_its_taint():
    spec = _pod(profiling=True, profiling_node=True)["spec"]
    assert spec["nodeSelector"] == {"GpuType": "t4", "gpu-dev.pytorch.org/profiling": "true"}
    assert spec["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "gpu-dev.pytorch.org/profiling", "operator": "Equal", "value": "true"},
    ]


@pytest.mark.parametrize(("profiling", "profiling_node"), [(True, False), (False, False)])
def test_a_pod_off_dedicated_nodes_neither_selects_nor_tolerates_them(
    profiling: bool, profiling_node: bool
):
    spec = _pod(profiling=profiling, profiling_node=profiling_node)["spec"]
    assert spec["nodeSelector"] == {"GpuType": "t4"}
    assert all(t["key"] != "gpu-dev.pytorch.org/profiling" for t in spec["tolerations"])
