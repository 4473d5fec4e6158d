"""The sweeper on the whole local deployment: what a failed lifecycle leaves behind is
repaired by one run (invoked by hand, as EventBridge would every 5 minutes)."""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from gpudev.cluster.vocabulary import RESERVATION_LABEL
from localcloud.stack import LocalCloud
from tests.lifecycle.helpers import (
    STOPPED_REASON,
    allocated_slots,
    assert_nothing_left,
    h100s_full_and_one_queued,
    objects_of,
    reserve,
    show,
    stop_execution,
    sweep,
    task_token,
    wait_for_status,
)


def sql(cloud: LocalCloud, statement: str, *params: Any) -> None:
    with psycopg.connect(cloud.database_url, autocommit=True) as conn:
        conn.execute(statement, params)  # type: ignore[arg-type]


def test_an_execution_stopped_by_an_operator_is_swept_and_the_next_in_queue_starts(
    api, local_cloud
):
    stopped, other, waiting = h100s_full_and_one_queued(api)

    stop_execution(local_cloud, stopped)
    time.sleep(1)
    assert show(api, stopped)["status"] == "active", "nothing else notices"
    assert objects_of(local_cloud, stopped)["pods"]

    swept = sweep(local_cloud)

    assert swept["outcome"] == "succeeded"
    assert swept["statistics"]["reservations_ended"] == 1
    assert swept["statistics"]["slots_released"] == 8
    # pod, 2 services, ConfigMap, Secret, NetworkPolicy, the personal share's claim and its
    # (cluster-scoped) volume
    assert swept["statistics"]["objects_deleted"] == 8
    assert swept["repairs"] == 1 + 8
    ended = show(api, stopped)
    assert ended["status"] == "failed" and STOPPED_REASON.fullmatch(ended["failure_reason"])
    assert_nothing_left(local_cloud, stopped)
    wait_for_status(api, waiting, "active", profile="bob")
    assert show(api, other)["status"] == "active"
    assert sweep(local_cloud)["repairs"] == 0, "nothing left to repair"


def test_objects_of_a_reservation_that_no_longer_exists_are_deleted(api, local_cloud):
    rid = reserve(api, hours=0.6)["reservation_id"]
    wait_for_status(api, rid, "active")
    stop_execution(local_cloud, rid)
    sql(local_cloud, "DELETE FROM reservations WHERE reservation_id = %s", rid)
    assert sum(len(items) for items in objects_of(local_cloud, rid).values()) == 7

    swept = sweep(local_cloud)

    assert swept["statistics"]["objects_deleted"] == 7 + 1  # and the share's volume
    assert swept["statistics"]["reservations_ended"] == 0
    assert_nothing_left(local_cloud, rid)
    assert local_cloud.kubernetes is not None
    store = local_cloud.kubernetes.store

    def volumes() -> list[str]:  # deleted; held by pv-protection until its claim is gone
        items = store.list("persistentvolumes", None, f"{RESERVATION_LABEL}={rid}")["items"]
        return [v["metadata"]["name"] for v in items]

    deadline = time.monotonic() + 20
    while volumes():
        assert time.monotonic() < deadline, volumes()
        time.sleep(0.1)


def test_a_pending_reservation_nobody_started_gets_its_job_again_or_ends_after_the_tries(
    api, local_cloud
):
    assert local_cloud.aws is not None
    sqs = local_cloud.aws.client("sqs")
    queue_url = local_cloud.resources.queue_urls["Jobs"]
    local_cloud.pollers["Jobs"].pause()  # returns once a long poll in flight has finished
    lost = reserve(api)["reservation_id"]
    given_up = reserve(api)["reservation_id"]
    sqs.purge_queue(QueueUrl=queue_url)  # both jobs lost (say, in the dead-letter queue)
    sql(
        local_cloud,
        "UPDATE reservations SET created_at = now() - interval '10 minutes'"
        " WHERE reservation_id = ANY(%s::uuid[])",
        [lost, given_up],
    )
    sql(
        local_cloud,
        "UPDATE reservations SET create_job_resends = 3,"
        " create_job_resent_at = now() - interval '10 minutes' WHERE reservation_id = %s",
        given_up,
    )

    swept = sweep(local_cloud)

    assert swept["statistics"]["create_jobs_resent"] == 1
    assert swept["statistics"]["reservations_ended"] == 1
    ended = show(api, given_up)
    assert ended["status"] == "failed"
    assert "sent 4 times" in ended["failure_reason"]
    assert show(api, lost)["status"] == "pending"
    assert sweep(local_cloud)["statistics"]["create_jobs_resent"] == 0, "one try per interval"
    local_cloud.pollers["Jobs"].paused = False
    wait_for_status(api, lost, "active")


def test_two_concurrent_runs_never_overlap(api, local_cloud):
    assert local_cloud.kubernetes is not None
    local_cloud.kubernetes.faults.delay("list", "pods", 1.0)  # the first run holds the lock
    outcomes: list[str] = []
    first = threading.Thread(
        target=lambda: outcomes.append(sweep(local_cloud, until_run=False)["outcome"])
    )
    first.start()
    time.sleep(0.3)
    outcomes.append(sweep(local_cloud, until_run=False)["outcome"])
    first.join(15)
    assert sorted(outcomes) == ["skipped", "succeeded"]
    with psycopg.connect(local_cloud.database_url) as conn:
        recorded = conn.execute(
            "SELECT outcome FROM reconciler_runs WHERE reconciler = 'sweeper'"
            " ORDER BY run_id DESC LIMIT 2"
        ).fetchall()
    assert sorted(r[0] for r in recorded) == ["skipped", "succeeded"]


def test_a_sweep_of_a_healthy_deployment_changes_nothing(api, local_cloud):
    rid = reserve(api)["reservation_id"]
    wait_for_status(api, rid, "active")
    swept = sweep(local_cloud)
    assert swept["repairs"] == 0 and swept["statistics"]["live_reservations"] >= 1
    assert show(api, rid)["status"] == "active" and allocated_slots(local_cloud, rid) == 1


def wait_until_parked(cloud: LocalCloud, reservation_id: str) -> None:
    """Its execution parked on a token (after its first checkpoint)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            task_token(cloud, reservation_id)
            return
        except AssertionError:
            assert time.monotonic() < deadline, "never parked"
            time.sleep(0.1)


def test_a_cancel_whose_job_dead_lettered_ends_the_reservation_within_one_sweep(api, local_cloud):
    # Given an active 8-GPU reservation whose cancel was committed ten minutes ago but whose
    # job never reached the execution (dead-lettered: the API's row, no job)
    rid = reserve(api, gpu_type="h100", gpu_count=8, hours=2)["reservation_id"]
    wait_for_status(api, rid, "active")
    wait_until_parked(local_cloud, rid)
    sql(
        local_cloud,
        "UPDATE reservations SET cancel_requested_at = now() - interval '10 minutes'"
        " WHERE reservation_id = %s",
        rid,
    )
    assert allocated_slots(local_cloud, rid) == 8

    # When one sweep runs
    swept = sweep(local_cloud)

    # Then the execution was woken and tore the reservation down: cancelled, GPUs released
    assert swept["statistics"]["executions_woken"] == 1
    assert swept["statistics"]["reservations_ended"] == 0, "its own tear down ends it"
    assert swept["repairs"] == 1
    wait_for_status(api, rid, "cancelled")
    assert_nothing_left(local_cloud, rid)
    assert sweep(local_cloud)["repairs"] == 0, "nothing left to repair"


def test_a_change_whose_job_dead_lettered_is_applied_after_one_sweep(api, local_cloud):
    # Given an active reservation extended by an hour whose change job never arrived (the
    # API's row, as change.sql writes it, and no job)
    rid = reserve(api, hours=1)["reservation_id"]
    wait_for_status(api, rid, "active")
    wait_until_parked(local_cloud, rid)
    before = show(api, rid)["expires_at"]
    sql(
        local_cloud,
        "UPDATE reservations SET duration_hours = duration_hours + 1,"
        " change_generation = change_generation + 1 WHERE reservation_id = %s",
        rid,
    )

    # When one sweep runs
    swept = sweep(local_cloud)

    # Then the execution was woken and applied it: the expiry moved by the hour
    assert swept["statistics"]["executions_woken"] == 1
    deadline = time.monotonic() + 20
    while show(api, rid)["expires_at"] == before:
        assert time.monotonic() < deadline, "the change was never applied"
        time.sleep(0.2)
    assert sweep(local_cloud)["statistics"]["executions_woken"] == 0, "applied: nothing to wake"
