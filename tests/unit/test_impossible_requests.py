"""A request the cluster can never place is refused at submit with one sentence naming the
types that have nodes (issue #28 item 3); a type not measured yet refuses nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpudev.errors import InvalidRequest
from gpudev.models import GpuType
from gpudev.reservations.rules import beyond_the_cluster, resolve_shape, types_with_nodes

MEASURED = datetime(2026, 11, 27, tzinfo=UTC)


def gpu_type(name: str, per_node: int, max_nodes: int, measured: bool = True) -> GpuType:
    return GpuType(
        gpu_type=name,
        instance_type="x",
        max_gpus=per_node,
        cpus=8,
        memory_gb=32,
        is_active=True,
        description=None,
        last_availability_update=MEASURED if measured else None,
        last_availability_updated_by="test" if measured else None,
        total_cluster_gpus=0,
        available_gpus=0,
        max_reservable=0,
        full_nodes_available=0,
        running_instances=0,
        desired_capacity=0,
        max_per_node=per_node,
        max_nodes=max_nodes,
        max_nodes_since=MEASURED if measured else None,
    )


# The local cloud's shape (localcloud/cluster.json): t4, h100 and cpu-x86 have node groups.
CATALOGUE = [
    gpu_type("a100", 8, 0),
    gpu_type("h100", 8, 2),
    gpu_type("t4", 4, 8),
    gpu_type("cpu-x86", 0, 8),
]


def test_a_type_with_no_nodes_is_refused_naming_the_types_that_have_nodes():
    with pytest.raises(InvalidRequest) as refused:
        resolve_shape(CATALOGUE, "A100", 8)
    assert refused.value.message == (
        "no a100 nodes in this cluster; types with nodes: h100, t4, cpu-x86"
    )
    assert (refused.value.field, refused.value.allowed) == ("gpu_type", "h100, t4, cpu-x86")


def test_more_nodes_than_the_node_groups_can_ever_hold_is_refused():
    with pytest.raises(InvalidRequest) as refused:
        resolve_shape(CATALOGUE, "h100", 32)
    assert refused.value.message == (
        "h100 has at most 2 nodes in this cluster and this request needs 4; "
        "types with nodes: h100, t4, cpu-x86"
    )
    assert refused.value.field == "gpu_count"


@pytest.mark.parametrize(("name", "count"), [("h100", 16), ("h100", 8), ("t4", 4), ("cpu-x86", 0)])
def test_what_the_node_groups_can_hold_is_accepted(name, count):
    assert resolve_shape(CATALOGUE, name, count).gpu_type.gpu_type == name


def test_a_type_the_updater_has_not_measured_yet_is_not_refused():
    catalogue = [gpu_type("a100", 8, 0, measured=False), gpu_type("t4", 4, 0)]
    assert resolve_shape(catalogue, "a100", 8).total_nodes == 1
    assert beyond_the_cluster(catalogue[0], 4, catalogue) is None
    assert types_with_nodes(catalogue) == []  # named only once measured


def test_a_cluster_without_any_nodes_says_none():
    catalogue = [gpu_type("t4", 4, 0)]
    assert beyond_the_cluster(catalogue[0], 1, catalogue) == (
        "no t4 nodes in this cluster; types with nodes: none"
    )


def test_a_type_measured_only_before_max_nodes_existed_is_refused_nothing():
    """Right after migration 0031 every type reads max_nodes 0 until the availability
    updater's next run: until then nothing may be refused as impossible."""
    upgraded = gpu_type("h100", 8, 0).model_copy(update={"max_nodes_since": None})
    assert upgraded.has_possible_nodes is None
    resolve_shape([upgraded, *CATALOGUE[2:]], "h100", 8)
