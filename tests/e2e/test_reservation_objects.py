"""The lifecycle's object writer against the stand-in: an existing object of our name is
adopted only when it is ours, and deleting by name never touches another reservation's."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kubernetes import client

from gpudev.cluster.objects_client import ObjectNameTaken, ReservationObjects
from gpudev.cluster.vocabulary import RESERVATION_LABEL

NAMESPACE = "gpu-dev"


def _config_map(name: str, reservation_id: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {RESERVATION_LABEL: reservation_id}},
        "data": {"owner": reservation_id},
    }


@pytest.fixture
def objects(core: client.CoreV1Api) -> ReservationObjects:
    return ReservationObjects(core.api_client, NAMESPACE)


def test_a_retried_create_adopts_its_own_object(objects: ReservationObjects, core):
    ours, name = str(uuid.uuid4()), f"gpu-dev-{uuid.uuid4().hex[:8]}-control"
    objects.create(_config_map(name, ours))
    objects.create(_config_map(name, ours))
    assert core.read_namespaced_config_map(name, NAMESPACE).data == {"owner": ours}


def test_another_reservations_object_of_the_same_name_is_never_taken_over(
    objects: ReservationObjects, core
):
    theirs, ours = str(uuid.uuid4()), str(uuid.uuid4())
    name = f"gpu-dev-{uuid.uuid4().hex[:8]}-control"
    objects.create(_config_map(name, theirs))
    with pytest.raises(ObjectNameTaken, match=theirs):
        objects.create(_config_map(name, ours))
    assert objects.delete_all(ours, name=name) == 0
    assert core.read_namespaced_config_map(name, NAMESPACE).data == {"owner": theirs}
    assert objects.delete_all(theirs, name=name) == 1
