"""The pod's environment follows torchrun's conventions: NNODES / NODE_RANK /
NPROC_PER_NODE / MASTER_ADDR / MASTER_PORT (and the same as PET_*, which torchrun reads for
options not on its command line), never RANK / WORLD_SIZE, which torch.distributed's env://
reads as the process rank and count."""

from __future__ import annotations

from typing import Any

from gpudev.cluster import objects
from gpudev.cluster.names import Names, Placement
from tests.unit.test_manifest_drift import _catalogue, _reservation

H100 = next(t for t in _catalogue() if t.gpu_type == "h100")
CPU = next(t for t in _catalogue() if t.is_cpu_only)


def _env(gpu_type: Any, gpus: int, nodes: int, rank: int) -> tuple[Any, dict[str, str]]:
    reservation = _reservation("alice", gpu_type, gpus, nodes)
    placement = Placement(rank, f"i-{rank}", f"10.0.0.{rank + 1}", gpu_type.max_gpus)
    pod = objects.pod(reservation, gpu_type, placement, "img")
    return reservation, {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}


def test_a_multinode_pod_gets_torchruns_node_variables_not_process_ones():
    reservation, env = _env(H100, 16, 2, rank=1)
    names = Names.of(reservation)
    master = f"{names.pod(0)}.{names.headless_service}"
    expected = {
        "NNODES": "2",
        "NODE_RANK": "1",
        "NPROC_PER_NODE": "8",
        "MASTER_ADDR": master,
        "MASTER_PORT": "29500",
    }
    assert {k: env[k] for k in expected} == expected
    assert {k: env[f"PET_{k}"] for k in expected} == expected
    assert "RANK" not in env and "WORLD_SIZE" not in env
    assert env["GPU_DEV_PEERS"] == f"{master},{names.pod(1)}.{names.headless_service}"


def test_a_single_node_pod_runs_torchrun_standalone_without_a_master():
    _, env = _env(H100, 4, 1, rank=0)
    assert (env["NNODES"], env["NODE_RANK"], env["NPROC_PER_NODE"]) == ("1", "0", "4")
    assert env["PET_NPROC_PER_NODE"] == "4"
    assert "MASTER_ADDR" not in env and "PET_MASTER_ADDR" not in env
    assert "RANK" not in env and "WORLD_SIZE" not in env


def test_a_cpu_pod_runs_one_process_per_node():
    _, env = _env(CPU, 0, 1, rank=0)
    assert env["NPROC_PER_NODE"] == "1"


def test_the_control_config_map_carries_the_pod_health_warning():
    reservation = _reservation("alice", H100, 1, 1)
    data = objects.control_config_map(reservation, "2026-11-24T12:00:00+00:00", None, "", "OOM")
    assert data["data"]["health_warning"] == "OOM"
    assert objects.control_config_map(reservation, "", None, "")["data"]["health_warning"] == ""


def test_the_pod_image_is_a_deploy_setting_defaulting_to_the_public_pytorch_image():
    from cdk_app.declaration import POD_IMAGE, RESERVATION_TASKS
    from gpudev.settings import LifecycleSettings

    assert POD_IMAGE.variable == "LIFECYCLE_POD_IMAGE"
    assert POD_IMAGE.default == LifecycleSettings().pod_image
    assert str(POD_IMAGE.default).startswith("pytorch/pytorch:")
    assert POD_IMAGE in RESERVATION_TASKS.context_environment


def _container(gpu_type: Any, gpus: int, nodes: int, rank: int = 0) -> dict[str, Any]:
    reservation = _reservation("alice", gpu_type, gpus, nodes)
    placement = Placement(rank, f"i-{rank}", f"10.0.0.{rank + 1}", gpu_type.max_gpus)
    container: dict[str, Any] = objects.pod(reservation, gpu_type, placement, "img")["spec"][
        "containers"
    ][0]
    return container


def test_a_whole_node_pod_of_a_multinode_reservation_requests_every_efa_interface():
    container = _container(H100, 16, 2, rank=1)
    env = {e["name"]: e["value"] for e in container["env"]}
    assert H100.efa_interfaces == 32  # p5.48xlarge, from the catalogue (migration 0041)
    assert container["resources"]["requests"]["vpc.amazonaws.com/efa"] == "32"
    assert container["resources"]["limits"]["vpc.amazonaws.com/efa"] == "32"
    assert env["FI_PROVIDER"] == "efa"
    assert env["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert "/opt/amazon/ofi-nccl/lib" in env["GPU_DEV_OFI_NCCL_PATH"]
    assert env["NCCL_SOCKET_IFNAME"] == "eth0"  # NCCL's bootstrap only
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/etc/gpu-dev/nodes", "/etc/gpu-dev/node-key"} <= mounts


def test_a100_nodes_have_four_efa_interfaces():
    a100 = next(t for t in _catalogue() if t.gpu_type == "a100")
    container = _container(a100, 16, 2)
    assert container["resources"]["limits"]["vpc.amazonaws.com/efa"] == "4"


def test_single_node_partial_node_and_non_efa_pods_request_no_efa():
    t4 = next(t for t in _catalogue() if t.gpu_type == "t4")
    for container in (
        _container(H100, 8, 1),  # a whole node, but alone: no peer to reach
        _container(H100, 4, 1),  # part of a node
        _container(t4, 8, 2),  # multinode on a type without EFA
        _container(CPU, 0, 1),
    ):
        assert "vpc.amazonaws.com/efa" not in container["resources"].get("limits", {})
        assert "FI_PROVIDER" not in {e["name"] for e in container["env"]}
    # a single-node pod mounts no nodes' key
    assert "/etc/gpu-dev/node-key" not in {
        m["mountPath"] for m in _container(H100, 8, 1)["volumeMounts"]
    }
