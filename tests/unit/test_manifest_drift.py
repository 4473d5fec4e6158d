"""Every manifest our lifecycle builds (`gpudev.cluster.objects`), for every GPU type in the
catalogue migration, survives the official client's models unchanged (a misspelt field would
vanish there, and so in EKS) and passes the stand-in's validation, which follows
kube-apiserver's. This keeps our objects, the client and the stand-in from drifting apart."""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from kubernetes.client import ApiClient

from gpudev.cluster import network, node_access, objects
from gpudev.cluster.host_keys import new_host_key
from gpudev.cluster.names import Placement
from gpudev.models import GpuType, Reservation, ReservationStatus, TypeCapacity
from localcloud.kubernetes import validation

CATALOGUE = Path(__file__).parents[2] / "migrations" / "0002_gpu_type_catalogue.sql"
EFA_COUNTS = Path(__file__).parents[2] / "migrations" / "0041_fabric.sql"
RESOURCES = {
    "Pod": "pods",
    "Service": "services",
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "NetworkPolicy": "networkpolicies",
}
DEPLOYED = Path(__file__).parents[2] / "deploy" / "kubernetes" / "network-policies.yaml"


def _catalogue() -> list[GpuType]:
    """The catalogue migration's types as their rows read before the availability updater
    first ran: no capacity measured yet (a manifest takes only the catalogue's columns)."""
    rows = re.findall(
        r"\('([\w-]+)',\s*'([\w.-]+)',\s*(\d+),\s*(\d+),\s*(\d+),\s*(\d+)", CATALOGUE.read_text()
    )
    assert len(rows) >= 10, "the catalogue migration changed shape"
    columns = ("gpu_type", "instance_type", "max_gpus", "cpus", "memory_gb", "max_per_node")
    unmeasured: dict[str, Any] = dict.fromkeys(TypeCapacity.model_fields, 0) | {
        "is_active": True,
        "description": None,
        "last_availability_update": None,
        "last_availability_updated_by": None,
    }
    efa = dict(re.findall(r"WHEN '([\w.-]+)' THEN (\d+)", EFA_COUNTS.read_text()))
    return [
        GpuType.model_validate(
            unmeasured
            | dict(zip(columns, row, strict=True))
            | {"efa_interfaces": int(efa.get(row[1], 0))}
        )
        for row in rows
    ]


def _reservation(
    user_id: str, gpu_type: GpuType, gpus: int, nodes: int, profiling: bool = False
) -> Reservation:
    now = datetime.now(UTC)
    fields: dict[str, Any] = dict.fromkeys(Reservation.model_fields)
    return Reservation(
        **fields
        | {
            "reservation_id": uuid.uuid4(),
            "user_id": user_id,
            "status": ReservationStatus.PREPARING,
            "gpu_type": gpu_type.gpu_type,
            "gpu_count": gpus,
            "total_nodes": nodes,
            "duration_hours": 8.0,
            "jupyter_enabled": True,
            "profiling": profiling,
            "preserve_entrypoint": False,
            "docker": False,
            "jupyter_token": "token-123",
            "namespace": "gpu-dev",
            "secondary_users": [],
            "ssh_host_keys": [],
            "ssh_nodes": [],
            "keyless_users": [],
            "warnings_sent": [],
            "oom_count": 0,
            "pod_restarts": 0,
            "change_generation": 0,
            "applied_generation": 0,
            "created_at": now,
            "updated_at": now,
        }
    )


def _shapes() -> list[tuple[GpuType, int, int]]:
    """Each type reserved whole, a single GPU where a node has several, and two nodes."""
    shapes = []
    for gpu_type in _catalogue():
        shapes.append((gpu_type, gpu_type.max_gpus, 1))
        if gpu_type.max_gpus > 1:
            shapes += [(gpu_type, 1, 1), (gpu_type, gpu_type.max_gpus * 2, 2)]
    return shapes


def _manifests(user_id: str) -> list[tuple[str, dict[str, Any]]]:
    built: list[tuple[str, dict[str, Any]]] = []
    for gpu_type, gpus, nodes in _shapes():
        reservation = _reservation(user_id, gpu_type, gpus, nodes)
        shape = f"{gpu_type.gpu_type}x{gpus}/{nodes}"
        for rank in range(nodes):
            placement = Placement(rank, f"i-0{rank}abcdef", f"10.0.0.{rank + 10}", gpus // nodes)
            built.append(
                (
                    f"pod {shape} rank {rank}",
                    objects.pod(reservation, gpu_type, placement, "pytorch/pytorch:2.5"),
                )
            )
    profiling = _reservation(user_id, _catalogue()[0], 1, 1, profiling=True)
    built.append(
        (
            "profiling pod",
            objects.pod(profiling, _catalogue()[0], Placement(0, "i-0", None, 1), "pytorch:2.5"),
        )
    )
    reservation = _reservation(user_id, _catalogue()[0], 1, 1)
    builders: dict[str, Callable[[], dict[str, Any]]] = {
        "ssh_service": lambda: network.ssh_service(reservation),
        "ssh_service of node 1": lambda: network.ssh_service(
            _reservation(user_id, _catalogue()[0], 16, 2), rank=1
        ),
        "headless_service": lambda: network.headless_service(reservation),
        "network_policy": lambda: network.network_policy(reservation),
        "control_config_map": lambda: objects.control_config_map(
            reservation, "2030-01-01T00:00:00Z", 30, "30 minutes left"
        ),
        "control_config_map without warning": lambda: objects.control_config_map(
            reservation, "2030-01-01T00:00:00Z", None, ""
        ),
        "nodes_config_map": lambda: objects.nodes_config_map(
            _reservation(user_id, _catalogue()[0], 16, 2), 8, new_host_key().public
        ),
        "nodes_secret": lambda: objects.nodes_secret(
            _reservation(user_id, _catalogue()[0], 16, 2), node_access.new_node_key()
        ),
        "keys_secret": lambda: objects.keys_secret(
            reservation,
            "ssh-ed25519 AAAAC3Nz carol@laptop",
            {"Octo-Cat": "ssh-ed25519 AAAAC3Nz octo@github"},
            new_host_key().entries(),
        ),
    }
    return built + [(name, build()) for name, build in builders.items()]


def _round_trip(manifest: dict[str, Any]) -> dict[str, Any]:
    """Through the official client's model, as our code's manifests travel to EKS."""
    api = ApiClient()
    model = api.deserialize(json.dumps(manifest), f"V1{manifest['kind']}", "application/json")
    result: dict[str, Any] = api.sanitize_for_serialization(model)
    return result


def _cases() -> list[Any]:
    cases = [pytest.param(m, id=name) for name, m in _manifests("alice")]
    cases += [
        pytest.param(m, id=f"sso user: {name}")
        for name, m in _manifests("carol@example.com")
        if not name.startswith("pod ") or name.startswith("pod h100x8/1")
    ]
    with DEPLOYED.open() as file:
        cases += [
            pytest.param(m, id=f"deployed {m['metadata']['namespace']}/{m['metadata']['name']}")
            for m in yaml.safe_load_all(file)
        ]
    return cases


@pytest.mark.parametrize("manifest", _cases())
def test_our_manifest_survives_the_client_models_and_the_api_servers_validation(
    manifest: dict[str, Any],
):
    sent = _round_trip(manifest)
    assert sent == manifest, "a field our manifest sets is unknown to the client's models"
    kind = manifest["kind"]
    rejection = validation.admit(RESOURCES[kind], kind, copy.deepcopy(sent))
    assert rejection is None, rejection.message


def test_a_misspelt_field_is_lost_in_the_client_models_and_caught_here():
    manifest = network.headless_service(_reservation("alice", _catalogue()[0], 1, 1))
    manifest["spec"]["clusterIp"] = manifest["spec"].pop("clusterIP")
    assert "clusterIp" not in _round_trip(manifest)["spec"]
