"""The stand-in's one node selector requirement matcher, used for pod node affinity
(`cluster.node_accepts`) and PersistentVolume node affinity (`volume_scheduling`)."""

from __future__ import annotations

from typing import Any

import pytest

from localcloud.kubernetes import volume_scheduling
from localcloud.kubernetes.cluster import node_accepts
from localcloud.kubernetes.selectors import expression_matches

LABELS = {"zone": "us-east-2a", "gpus": "8"}


@pytest.mark.parametrize(
    ("operator", "key", "values", "expected"),
    [
        ("In", "zone", ["us-east-2a", "us-east-2b"], True),
        ("In", "zone", ["us-east-2b"], False),
        ("NotIn", "zone", ["us-east-2b"], True),
        ("NotIn", "zone", ["us-east-2a"], False),
        ("Exists", "zone", None, True),
        ("Exists", "rack", None, False),
        ("DoesNotExist", "rack", None, True),
        ("DoesNotExist", "zone", None, False),
        ("Gt", "gpus", ["4"], True),
        ("Gt", "gpus", ["8"], False),
        ("Lt", "gpus", ["9"], True),
        ("Lt", "gpus", ["8"], False),
        ("Gt", "zone", ["1"], False),  # not an integer: no match, as in Kubernetes
        ("Gt", "rack", ["1"], False),  # absent
    ],
)
def test_each_operator(operator: str, key: str, values: list[str] | None, expected: bool):
    expression = {"key": key, "operator": operator, **({"values": values} if values else {})}
    assert expression_matches(LABELS, expression) is expected


def _node(labels: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "labels": labels}, "spec": {}}


def _pod_requiring(expression: dict[str, Any]) -> dict[str, Any]:
    term = {"matchExpressions": [expression]}
    affinity = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    return {"spec": {"affinity": {"nodeAffinity": affinity}}}


def _volume_requiring(expression: dict[str, Any]) -> dict[str, Any]:
    term = {"matchExpressions": [expression]}
    return {"spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"key": "gpus", "operator": "Gt", "values": ["4"]}, True),
        ({"key": "gpus", "operator": "Lt", "values": ["4"]}, False),
        ({"key": "zone", "operator": "In", "values": ["us-east-2b"]}, False),
    ],
)
def test_pods_and_volumes_answer_alike(expression: dict[str, Any], expected: bool):
    node = _node(LABELS)
    assert node_accepts(node, _pod_requiring(expression)) is expected
    assert volume_scheduling.volume_fits_node(_volume_requiring(expression), node) is expected
