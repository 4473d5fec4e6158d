"""The sweeper lets go a pod stuck Terminating by the disk listing's finalizer
(gpudev/sweeper/listings.py): real PostgreSQL, the Kubernetes stand-in's API server (which
keeps an object with finalizers until the last one is removed) through the official client
and `ReservationObjects`; Step Functions and SQS are the small fakes of test_sweeper.py."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from gpudev.cluster.home_listing import LISTING_FINALIZER
from gpudev.cluster.objects_client import ReservationObjects
from gpudev.cluster.vocabulary import RESERVATION_LABEL
from gpudev.jobs import JobQueue
from gpudev.sweeper.plan import Limits
from gpudev.sweeper.service import Sweeper
from localcloud.kubernetes.store import ObjectStore
from tests.integration.test_sweeper import (
    LIMITS,
    MACHINE,
    World,
    end_row,
    execution_of,
    hold_disk,
    insert,
)
from tests.integration.test_sweeper import world as world  # the fixture
from tests.support.kubernetes import stand_in_api_client, stand_in_server

NAMESPACE = "gpu-dev"


@pytest.fixture(scope="module")
def api_client() -> Iterator[Any]:
    server = stand_in_server(ObjectStore(), "test")
    server.start()
    api = stand_in_api_client(server)
    try:
        yield api
    finally:
        api.close()
        server.stop()


def _terminating_pod(core: client.CoreV1Api, rid: uuid.UUID) -> str:
    """Pod 0 of `rid` with the listing's finalizer, deleted: Terminating (no kubelet here,
    nobody reads its listing)."""
    name = f"gpu-dev-{str(rid)[:8]}-0"
    core.create_namespaced_pod(
        NAMESPACE,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "labels": {RESERVATION_LABEL: str(rid)},
                "finalizers": [LISTING_FINALIZER],
            },
            "spec": {"containers": [{"name": "dev", "image": "pytorch/pytorch"}]},
        },
    )
    core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
    return name


def _pod(core: client.CoreV1Api, name: str) -> Any:
    found = [p for p in core.list_namespaced_pod(NAMESPACE).items if p.metadata.name == name]
    return found[0] if found else None


def _sweeper(world: World, api_client: Any, limits: Limits) -> Sweeper:
    return Sweeper(
        conn=None,  # type: ignore[arg-type]  (set by the caller)
        objects=[ReservationObjects(api_client, NAMESPACE)],
        stepfunctions=world.stepfunctions,
        jobs=JobQueue(world.sqs, "https://sqs/jobs"),
        state_machine_arn=MACHINE,
        limits=limits,
        allocate=lambda: None,
        save_disk=world.save_disk,
    )


def test_a_pod_left_with_the_listing_finalizer_is_released_once_past_the_patience(
    world: World,
    api_client: Any,
):
    import psycopg

    core = client.CoreV1Api(api_client)
    stuck = insert(world.url, "active")
    end_row(world.url, stuck, "2 hours")  # ended, its disk freed: nothing will read the pod
    live = insert(world.url, "active")
    world.stepfunctions.executions[execution_of(live)] = "RUNNING"
    saving = insert(world.url, "active")  # ended, its disk still held: the save path's
    end_row(world.url, saving, "2 hours")
    hold_disk(world.url, saving)
    world.stepfunctions.executions[execution_of(saving)] = "RUNNING"
    names = {rid: _terminating_pod(core, rid) for rid in (stuck, live, saving)}

    with psycopg.connect(world.url, autocommit=True) as conn:
        sweeper = _sweeper(world, api_client, LIMITS)
        sweeper.conn = conn
        patient = sweeper.run("test")
        assert patient.statistics["listings_released"] == 0, "within the listing patience"
        assert all(_pod(core, name) is not None for name in names.values())

        sweeper.limits = Limits(**{**LIMITS.__dict__, "listing_patience_seconds": 0})
        swept = sweeper.run("test")

    assert swept.outcome == "succeeded"
    assert swept.statistics["listings_released"] == 1
    assert swept.statistics["errors"] == 0 and swept.statistics["objects_deleted"] == 0
    assert swept.statistics["reservations_ended"] == 0
    assert swept.repairs == 1
    assert _pod(core, names[stuck]) is None, "the last finalizer gone: the pod is deleted"
    for rid in (live, saving):
        pod = _pod(core, names[rid])
        assert pod is not None and pod.metadata.finalizers == [LISTING_FINALIZER]
    assert world.disk_steps == [], "the held disk's execution is running: not the sweeper's"
