"""The availability rules of seeds 000/001, case by case, without I/O."""

from __future__ import annotations

import pytest

from gpudev.availability.compute import GpuTypeConfig, ScalingGroup, compute_availability
from gpudev.cluster.vocabulary import Node, Pod
from gpudev.models import Availability

H100 = GpuTypeConfig("h100", 8)
T4 = GpuTypeConfig("t4", 4)
T4_SMALL = GpuTypeConfig("t4-small", 1)
L4 = GpuTypeConfig("l4", 4)
CPU = GpuTypeConfig("cpu-x86", 0)


def node(name: str, gpu_type: str, gpus: int, ready: bool = True, cordoned: bool = False) -> Node:
    return Node(name, gpu_type, ready, cordoned, gpus)


def assert_counts(result: Availability, **expected: int) -> None:
    """The named figures of `result` are the expected ones (pytest shows each that differs)."""
    assert {name: getattr(result, name) for name in expected} == expected


def one(config: GpuTypeConfig, groups, nodes, pods):  # type: ignore[no-untyped-def]
    (result,) = compute_availability([config], groups, nodes, pods)
    return result


def test_seed_scenario_two_h100_nodes_one_four_gpu_pod():
    result = one(
        H100,
        [ScalingGroup("pytorch-gpu-dev-gpu-nodes-h100", 2, 2)],
        [node("a", "h100", 8), node("b", "h100", 8)],
        [Pod("gpu-dev-x", "a", "Running", 4)],
    )
    assert_counts(
        result, total_cluster_gpus=16, available_gpus=12, full_nodes_available=1, max_reservable=8
    )
    assert_counts(result, running_instances=2, desired_capacity=2)


def test_multinode_max_reservable_is_capped_at_four_whole_nodes():
    nodes = [node(f"n{i}", "h100", 8) for i in range(6)]
    result = one(H100, [ScalingGroup("pytorch-gpu-dev-gpu-nodes-h100", 6, 6)], nodes, [])
    assert_counts(result, full_nodes_available=6, max_reservable=32)


def test_multinode_type_without_a_full_node_falls_back_to_the_largest_single_node_free():
    nodes = [node("a", "h100", 8), node("b", "h100", 8)]
    pods = [Pod("p1", "a", "Running", 2), Pod("p2", "b", "Pending", 5)]
    result = one(H100, [ScalingGroup("pytorch-gpu-dev-gpu-nodes-h100", 2, 2)], nodes, pods)
    assert_counts(result, available_gpus=9, full_nodes_available=0, max_reservable=6)


def test_single_node_types_reserve_at_most_one_nodes_free_gpus():
    nodes = [node("a", "t4", 4), node("b", "t4", 4)]
    pods = [Pod("p", "a", "Running", 1)]
    result = one(T4, [ScalingGroup("pytorch-gpu-dev-gpu-nodes-t4", 2, 2)], nodes, pods)
    assert_counts(result, available_gpus=7, full_nodes_available=1, max_reservable=4)


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_finished_pods_hold_no_gpus(phase: str):
    result = one(
        T4,
        [ScalingGroup("pytorch-gpu-dev-gpu-nodes-t4", 1, 1)],
        [node("a", "t4", 4)],
        [Pod("p", "a", phase, 4)],
    )
    assert result.available_gpus == 4


def test_cordoned_and_not_ready_nodes_count_nothing():
    nodes = [node("a", "t4", 4, cordoned=True), node("b", "t4", 4, ready=False), node("c", "t4", 4)]
    result = one(T4, [ScalingGroup("pytorch-gpu-dev-gpu-nodes-t4", 3, 3)], nodes, [])
    assert_counts(result, total_cluster_gpus=12, available_gpus=4, full_nodes_available=1)


def test_over_requested_node_is_floored_at_zero():
    result = one(
        T4,
        [ScalingGroup("pytorch-gpu-dev-gpu-nodes-t4", 1, 1)],
        [node("a", "t4", 4)],
        [Pod("p", "a", "Running", 6)],
    )
    assert result.available_gpus == 0


def test_running_counts_in_service_instances_and_desired_sums_groups():
    groups = [
        ScalingGroup("pytorch-gpu-dev-gpu-nodes-l4", 3, 2),
        ScalingGroup("pytorch-gpu-dev-gpu-nodes-l4-spot", 2, 1),
    ]
    result = one(L4, groups, [], [])
    assert_counts(result, running_instances=3, desired_capacity=5, total_cluster_gpus=12)


def test_a_longer_type_name_owns_its_groups():
    groups = [
        ScalingGroup("pytorch-gpu-dev-gpu-nodes-t4", 2, 2),
        ScalingGroup("pytorch-gpu-dev-gpu-nodes-t4-small", 1, 1),
    ]
    t4, t4_small = compute_availability([T4, T4_SMALL], groups, [], [])
    assert (t4.running_instances, t4_small.running_instances) == (2, 1)


def test_no_matching_group_gives_zeros():
    result = one(
        H100, [ScalingGroup("pytorch-gpu-dev-gpu-nodes-a100", 1, 1)], [node("a", "h100", 8)], []
    )
    assert not result.groups_found
    assert_counts(result, total_cluster_gpus=0, available_gpus=0, max_reservable=0)


def test_kubernetes_unreachable_counts_everything_running_as_available():
    result = one(H100, [ScalingGroup("pytorch-gpu-dev-gpu-nodes-h100", 2, 2)], None, None)
    assert_counts(
        result, total_cluster_gpus=16, available_gpus=16, full_nodes_available=0, max_reservable=0
    )


def test_cpu_seed_scenario_two_nodes_one_dev_pod():
    result = one(
        CPU,
        [ScalingGroup("pytorch-gpu-dev-cpu-nodes-cpu-x86", 2, 2)],
        [node("a", "cpu-x86", 0), node("b", "cpu-x86", 0)],
        [
            Pod("gpu-dev-abc", "a", "Running", 0, reservation_id="abc"),
            Pod("kube-proxy-x", "a", "Running", 0),
            # the image pre-puller's pod holds no reservation's slot
            Pod("gpu-dev-prepuller-x7k2p", "b", "Running", 0, namespace="gpu-dev-prepuller"),
        ],
    )
    assert_counts(result, total_cluster_gpus=6, available_gpus=5, max_reservable=1, max_per_node=0)


@pytest.mark.parametrize(
    ("group_name", "found"),
    [
        ("pytorch-gpu-dev-gpu-nodes-cpu-x86", True),
        ("pytorch-gpu-dev-cpu-nodes-cpu-x86", True),
        ("pytorch-gpu-dev-cpu-nodes", True),
        ("pytorch-gpu-dev-cpu-nodes-cpu-arm", False),
    ],
)
def test_cpu_group_prefixes_are_tried_in_order(group_name: str, found: bool):
    cpu_arm = GpuTypeConfig("cpu-arm", 0)
    results = compute_availability([CPU, cpu_arm], [ScalingGroup(group_name, 1, 1)], [], [])
    assert results[0].groups_found is found


def test_full_cpu_node_offers_nothing():
    pods = [Pod(f"gpu-dev-{i}", "a", "Running", 0, reservation_id=str(i)) for i in range(3)]
    result = one(
        CPU,
        [ScalingGroup("pytorch-gpu-dev-cpu-nodes-cpu-x86", 1, 1)],
        [node("a", "cpu-x86", 0)],
        pods,
    )
    assert_counts(result, available_gpus=0, max_reservable=0)


def test_a_profiling_pods_node_is_held_whole_and_profiling_nodes_are_not_offered():
    """Profiling reservations hold whole nodes (allocation/plan.py), and nodes dedicated to
    profiling never take an ordinary request: neither is available to one."""
    nodes = [
        node("a", "h100", 8),
        node("b", "h100", 8),
        Node("p", "h100", True, False, 8, profiling=True),
    ]
    pods = [Pod("gpu-dev-x", "a", "Running", 1, namespace="gpu-dev-profiling")]
    groups = [ScalingGroup("pytorch-gpu-dev-gpu-nodes-h100", 3, 3)]
    result = compute_availability([H100], groups, nodes, pods, "gpu-dev-profiling")[0]
    assert_counts(result, available_gpus=8, full_nodes_available=1, max_reservable=8)
    cpu = compute_availability(
        [CPU],
        [ScalingGroup("pytorch-gpu-dev-cpu-nodes-cpu-x86", 1, 1)],
        [node("c", "cpu-x86", 0)],
        [Pod("gpu-dev-y", "c", "Running", 0, namespace="gpu-dev-profiling")],
        "gpu-dev-profiling",
    )[0]
    assert_counts(cpu, available_gpus=0, max_reservable=0)


def test_max_nodes_is_what_the_groups_can_scale_to_a_group_at_zero_included():
    groups = [
        ScalingGroup("pytorch-gpu-dev-gpu-nodes-h100-a", 0, 0, max_size=4),
        ScalingGroup("pytorch-gpu-dev-gpu-nodes-h100-b", 1, 1, max_size=2),
    ]
    assert_counts(one(H100, groups, [], []), max_nodes=6, running_instances=1)


def test_max_nodes_is_never_below_what_runs_or_is_wanted_and_zero_without_groups():
    # A MaxSize lowered under the running count: the running nodes still exist.
    lowered = [ScalingGroup("pytorch-gpu-dev-gpu-nodes-t4", 3, 3, max_size=1)]
    assert_counts(one(T4, lowered, [], []), max_nodes=3)
    assert_counts(one(L4, [], [], []), max_nodes=0, total_cluster_gpus=0)
    at_zero = [ScalingGroup("pytorch-gpu-dev-gpu-nodes-t4", 0, 0, max_size=0)]
    assert_counts(one(T4, at_zero, [], []), max_nodes=0)


def test_the_largest_multinode_request_counts_whole_nodes_of_one_fabric_only():
    """Two whole nodes in zone a and one in zone b: 16 GPUs can be placed now, not 24 (a
    multinode grant never spans zones or placement groups: allocation/pool.py)."""
    fabrics = ["us-east-2a/pg", "us-east-2a/pg", "us-east-2b/pg"]
    nodes = [Node(f"n{i}", "h100", True, False, 8, fabric=f) for i, f in enumerate(fabrics)]
    result = one(H100, [ScalingGroup("pytorch-gpu-dev-gpu-nodes-h100", 3, 3)], nodes, [])
    assert_counts(result, full_nodes_available=3, max_reservable=16)
    split = [Node(f"n{i}", "h100", True, False, 8, fabric=f"zone-{i}") for i in range(2)]
    result = one(H100, [ScalingGroup("pytorch-gpu-dev-gpu-nodes-h100", 2, 2)], split, [])
    assert_counts(result, full_nodes_available=2, max_reservable=8)  # one node's worth
