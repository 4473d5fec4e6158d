"""The availability updater against real PostgreSQL, with Auto Scaling stubbed at the client
and Kubernetes unreachable (every GPU of running nodes counts as available): an update and
its run commit together, and a failure anywhere leaves the old availability and one failed
run, never a run left open."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from botocore.stub import Stubber

from gpudev.availability.service import RECONCILER, update_availability
from gpudev.signals import Signals
from tests.support.stubs import stubbed_client

_NO_SIGNALS = Signals(None)  # Kubernetes unreachable: no pod is judged, nobody is woken


def _scaling_group(name: str, desired: int, in_service: int) -> dict[str, Any]:
    return {
        "AutoScalingGroupName": name,
        "MinSize": 0,
        "MaxSize": 10,
        "DesiredCapacity": desired,
        "DefaultCooldown": 300,
        "AvailabilityZones": ["us-east-2a"],
        "HealthCheckType": "EC2",
        "CreatedTime": datetime(2026, 11, 1, tzinfo=UTC),
        "Instances": [
            {
                "InstanceId": f"i-{index}",
                "AvailabilityZone": "us-east-2a",
                "LifecycleState": "InService",
                "HealthStatus": "Healthy",
                "ProtectedFromScaleIn": False,
            }
            for index in range(in_service)
        ],
    }


def _unreachable_cluster() -> Any:
    raise ConnectionError("the cluster's endpoint did not answer")


@pytest.fixture
def autoscaling() -> Iterator[tuple[Any, Stubber]]:
    with stubbed_client("autoscaling") as stubbed:
        yield stubbed


def _t4_group_of_two(stubber: Stubber) -> None:
    stubber.add_response(
        "describe_auto_scaling_groups",
        {"AutoScalingGroups": [_scaling_group("pytorch-gpu-dev-gpu-nodes-t4-a", 2, 2)]},
        {},
    )


def _t4(url: str) -> tuple[Any, ...]:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT total_cluster_gpus, available_gpus, last_availability_updated_by"
            " FROM gpu_types WHERE gpu_type = 't4'"
        ).fetchone()
    assert row is not None
    return tuple(row)


def _runs(url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return [
            tuple(r)
            for r in conn.execute(
                "SELECT outcome, error FROM reconciler_runs WHERE reconciler = %s ORDER BY run_id",
                (RECONCILER,),
            )
        ]


def test_an_update_writes_every_types_availability_and_its_run_together(
    conn: psycopg.Connection[Any], autoscaling: tuple[Any, Stubber], fresh_database: str
):
    client, stubber = autoscaling
    _t4_group_of_two(stubber)

    run = update_availability(conn, client, _unreachable_cluster, _NO_SIGNALS, invoked_by="test")

    assert _t4(fresh_database) == (8, 8, "test")
    assert _runs(fresh_database) == [("succeeded", None)]
    assert run.statistics["kubernetes_reachable"] is False
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_a_failure_after_the_availability_is_written_leaves_nothing_half_written(
    conn: psycopg.Connection[Any], autoscaling: tuple[Any, Stubber], fresh_database: str
):
    # Given a database that refuses to finish a run: the last statement of an update, after
    # every type's availability has been written.
    with psycopg.connect(fresh_database, autocommit=True) as admin:
        admin.execute(
            "CREATE FUNCTION refuse_finish() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN RAISE EXCEPTION 'injected: the run cannot be finished'; END $$"
        )
        admin.execute(
            "CREATE TRIGGER refuse_finish BEFORE UPDATE ON reconciler_runs"
            " FOR EACH ROW EXECUTE FUNCTION refuse_finish()"
        )
    before = _t4(fresh_database)
    client, stubber = autoscaling
    _t4_group_of_two(stubber)

    with pytest.raises(psycopg.errors.RaiseException, match="injected"):
        update_availability(conn, client, _unreachable_cluster, _NO_SIGNALS, invoked_by="test")

    # Then the availability is as it was, and the run is recorded failed, not left open.
    assert _t4(fresh_database) == before == (0, 0, None)
    [(outcome, error)] = _runs(fresh_database)
    assert outcome == "failed"
    assert error.startswith("RaiseException: injected: the run cannot be finished")


def test_a_failed_scaling_group_listing_changes_nothing_and_records_a_failed_run(
    conn: psycopg.Connection[Any], autoscaling: tuple[Any, Stubber], fresh_database: str
):
    client, stubber = autoscaling
    stubber.add_client_error("describe_auto_scaling_groups", "Throttling", "Rate exceeded")

    with pytest.raises(client.exceptions.ClientError):
        update_availability(conn, client, _unreachable_cluster, _NO_SIGNALS, invoked_by="test")

    assert _t4(fresh_database) == (0, 0, None)
    [(outcome, error)] = _runs(fresh_database)
    assert outcome == "failed" and "Throttling" in error


def _max_nodes(url: str) -> dict[str, tuple[int, Any]]:
    with psycopg.connect(url) as conn:
        return {
            row[0]: (row[1], row[2])
            for row in conn.execute("SELECT gpu_type, max_nodes, max_nodes_since FROM gpu_types")
        }


def test_max_nodes_is_the_groups_max_size_and_its_since_moves_only_when_it_changes(
    conn: psycopg.Connection[Any], autoscaling: tuple[Any, Stubber], fresh_database: str
):
    client, stubber = autoscaling
    _t4_group_of_two(stubber)  # MaxSize 10
    _t4_group_of_two(stubber)
    shrunk = _scaling_group("pytorch-gpu-dev-gpu-nodes-t4-a", 0, 0)
    shrunk["MaxSize"] = 0
    stubber.add_response("describe_auto_scaling_groups", {"AutoScalingGroups": [shrunk]}, {})

    update_availability(conn, client, _unreachable_cluster, _NO_SIGNALS, invoked_by="test")
    first = _max_nodes(fresh_database)
    update_availability(conn, client, _unreachable_cluster, _NO_SIGNALS, invoked_by="test")
    again = _max_nodes(fresh_database)
    update_availability(conn, client, _unreachable_cluster, _NO_SIGNALS, invoked_by="test")
    scaled_to_zero = _max_nodes(fresh_database)

    assert first["t4"][0] == 10 and first["h100"][0] == 0 and first["t4"][1] is not None
    assert again["t4"] == first["t4"]  # unchanged: its patience clock keeps running
    assert scaled_to_zero["t4"][0] == 0 and scaled_to_zero["t4"][1] > first["t4"][1]
    assert scaled_to_zero["h100"] == first["h100"]
