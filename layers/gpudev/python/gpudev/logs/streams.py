"""Where a pod's output lands: one stream per pod in the dev pods' log group, named
`<reservation id>.<pod name>`.

Fluent Bit builds the name from the pod's reservation label and its name
(`log_stream_template` in deploy/kubernetes/fluent-bit.yaml); the local cloud's kubelet
writes the same names (localcloud/kubernetes/log_shipping.py). A reservation's streams
share the prefix `<reservation id>.`, and node N's is its pod's (cluster/names.py)."""

from __future__ import annotations

SEPARATOR = "."


def stream_prefix(reservation_id: str) -> str:
    """What every stream of the reservation's pods starts with."""
    return f"{reservation_id}{SEPARATOR}"


def stream_name(reservation_id: str, pod_name: str) -> str:
    """The stream of one pod's output."""
    return f"{stream_prefix(reservation_id)}{pod_name}"
