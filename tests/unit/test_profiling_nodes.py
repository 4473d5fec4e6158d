"""A node is dedicated to profiling when the operator labelled it
`gpu-dev.pytorch.org/profiling=true` or tainted it with that key (cluster/inventory.py): the
profiling taint does not make it unschedulable to the allocator (its profiling pods
tolerate it), any other NoSchedule/NoExecute taint still does."""

from __future__ import annotations

from typing import Any

import pytest

from gpudev.allocation.rows import node_rows
from gpudev.cluster.inventory import _node

KEY = "gpu-dev.pytorch.org/profiling"


def _item(labels: dict[str, str], taints: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "i-0", "labels": {"GpuType": "h100", **labels}},
        "spec": {"taints": taints},
        "status": {
            "allocatable": {"nvidia.com/gpu": "8"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


@pytest.mark.parametrize(
    ("labels", "taints", "profiling", "schedulable"),
    [
        ({}, [], False, True),
        ({KEY: "true"}, [], True, True),
        ({KEY: "false"}, [], False, True),
        ({}, [{"key": KEY, "value": "true", "effect": "NoSchedule"}], True, True),
        (
            {KEY: "true"},
            [
                {"key": KEY, "value": "true", "effect": "NoSchedule"},
                {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
            ],
            True,
            True,
        ),
        ({KEY: "true"}, [{"key": "maintenance", "effect": "NoExecute"}], True, False),
    ],
)
def test_a_node_is_dedicated_to_profiling_by_its_label_or_its_taint(
    labels: dict[str, str], taints: list[dict[str, str]], profiling: bool, schedulable: bool
):
    node = _node(_item(labels, taints))
    assert node.profiling is profiling
    ((row,), _) = node_rows([node], [], set())
    assert (row.profiling, row.schedulable) == (profiling, schedulable)
