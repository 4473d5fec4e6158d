"""The sweeper's SQL and its run on real PostgreSQL, with the cluster, Step Functions and
SQS stubbed at the boundary (small fakes that answer as those APIs do)."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import psycopg
import pytest
from botocore.exceptions import ClientError

from gpudev.cluster.objects_client import KubernetesUnavailable
from gpudev.cluster.vocabulary import KINDS
from gpudev.jobs import JobQueue, parse_job
from gpudev.models import ReservationStatus
from gpudev.repositories import SweeperRepository
from gpudev.repositories.sweeper import EndReservation
from gpudev.sweeper.plan import Limits
from gpudev.sweeper.service import LOCK_KEY, Sweeper

MACHINE = "arn:aws:states:us-east-2:123456789012:stateMachine:gpudev-reservation"
LIMITS = Limits(pending_after_seconds=300, max_create_resends=2)


def execution_of(reservation_id: uuid.UUID) -> str:
    return MACHINE.replace(":stateMachine:", ":execution:") + f":{reservation_id}"


class Objects:
    """The cluster's labelled objects, as ReservationObjects lists and deletes them."""

    def __init__(self) -> None:
        self.items: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
        self.namespace = "gpu-dev"
        self.fail_lists = False

    def add(self, reservation_id: uuid.UUID | str) -> None:
        for kind in self.items:
            self.items[kind].append(
                {
                    "metadata": {
                        "name": f"{kind}-{reservation_id}",
                        "labels": {"gpu-dev/reservation": str(reservation_id)},
                    }
                }
            )

    def labelled(self, kind: str) -> list[dict[str, Any]]:
        if self.fail_lists:
            raise KubernetesUnavailable("list_namespaced_pod: HTTP 503")
        return list(self.items[kind])

    def delete_listed(
        self, kind: str, name: str, uid: str | None, resource_version: str | None
    ) -> bool:
        """As the API server: False when it is gone already (404)."""
        before = len(self.items[kind])
        self.items[kind] = [i for i in self.items[kind] if i["metadata"]["name"] != name]
        return len(self.items[kind]) < before

    def of(self, reservation_id: uuid.UUID) -> int:
        return sum(
            1
            for items in self.items.values()
            for i in items
            if i["metadata"]["labels"]["gpu-dev/reservation"] == str(reservation_id)
        )


class StepFunctions:
    """ListExecutions (paginated) and DescribeExecution over a dict of ARN → status;
    SendTaskSuccess to the open tokens (`tokens`: token → the error code it answers, or
    None to take it; a token not there is closed)."""

    def __init__(self) -> None:
        self.executions: dict[str, str] = {}
        self.described: list[str] = []
        self.tokens: dict[str, str | None] = {}
        self.woken: list[tuple[str, str]] = []

    def send_task_success(self, taskToken: str, output: str) -> dict[str, Any]:
        code = self.tokens.get(taskToken, "TaskDoesNotExist")
        if code is not None:
            raise ClientError({"Error": {"Code": code, "Message": "no"}}, "SendTaskSuccess")
        del self.tokens[taskToken]
        self.woken.append((taskToken, output))
        return {}

    def get_paginator(self, operation: str) -> Any:
        assert operation == "list_executions"
        executions = self.executions

        class Paginator:
            def paginate(self, stateMachineArn: str, statusFilter: str) -> Any:
                assert stateMachineArn == MACHINE
                yield {
                    "executions": [
                        {"executionArn": arn} for arn, s in executions.items() if s == statusFilter
                    ]
                }

        return Paginator()

    def describe_execution(self, executionArn: str) -> dict[str, Any]:
        self.described.append(executionArn)
        if executionArn not in self.executions:
            raise ClientError(
                {"Error": {"Code": "ExecutionDoesNotExist", "Message": "no"}}, "DescribeExecution"
            )
        return {"status": self.executions[executionArn]}


class Sqs:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send_message(self, **message: Any) -> dict[str, Any]:
        self.sent.append(message)
        return {"MessageId": str(len(self.sent))}


class World:
    def __init__(self, url: str):
        self.url = url
        self.objects = Objects()
        self.stepfunctions = StepFunctions()
        self.sqs = Sqs()
        self.allocations = 0
        self.disk_steps: list[uuid.UUID] = []  # holders whose disk a run advanced
        self.disk_step = "waiting"
        # reservations with a personal share's PersistentVolume (cluster-scoped)
        self.share_volumes: set[str] = set()

    def delete_volumes(self, reservation_id: str) -> int:
        if reservation_id not in self.share_volumes:
            return 0
        self.share_volumes.discard(reservation_id)
        return 1

    def save_disk(self, reservation_id: uuid.UUID) -> str:
        self.disk_steps.append(reservation_id)
        return self.disk_step

    def sweeper(self, conn: psycopg.Connection[Any], limits: Limits = LIMITS) -> Sweeper:
        def allocate() -> None:
            self.allocations += 1

        return Sweeper(
            conn=conn,
            objects=[self.objects],  # type: ignore[list-item]
            stepfunctions=self.stepfunctions,
            jobs=JobQueue(self.sqs, "https://sqs/jobs"),
            state_machine_arn=MACHINE,
            limits=limits,
            allocate=allocate,
            save_disk=self.save_disk,
            delete_volumes=self.delete_volumes,
            share_volumes=lambda: set(self.share_volumes),
        )

    def run(self, limits: Limits = LIMITS) -> Any:
        with psycopg.connect(self.url, autocommit=True) as conn:
            return self.sweeper(conn, limits).run("test")


@pytest.fixture
def world(fresh_database: str) -> World:
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
        conn.execute(
            "INSERT INTO cluster_nodes (node_name, gpu_type, slots, schedulable)"
            " VALUES ('h100-0', 'h100', 8, true)"
        )
        conn.execute(
            "INSERT INTO node_slots (node_name, slot)"
            " SELECT 'h100-0', s FROM generate_series(0, 7) s"
        )
    return World(fresh_database)


def insert(
    url: str, status: str, *, execution: bool = True, age: str = "1 hour", slots: int = 0
) -> uuid.UUID:
    rid = uuid.uuid4()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO reservations (reservation_id, user_id, status, gpu_type, gpu_count,"
            " duration_hours, execution_arn, created_at, launched_at, expires_at)"
            " VALUES (%s, 'alice', %s, 'h100', %s, 1, %s, now() - %s::interval,"
            " CASE WHEN %s = 'active' THEN now() END,"
            " CASE WHEN %s = 'active' THEN now() + interval '1 hour' END)",
            (
                rid,
                status,
                max(slots, 1),
                execution_of(rid) if execution else None,
                age,
                status,
                status,
            ),
        )
        conn.execute(
            "INSERT INTO allocations (node_name, slot, reservation_id)"
            " SELECT node_name, slot, %s FROM node_slots s WHERE NOT EXISTS"
            " (SELECT 1 FROM allocations a WHERE a.node_name = s.node_name AND a.slot = s.slot)"
            " ORDER BY slot LIMIT %s",
            (rid, slots),
        )
    return rid


def reservation(url: str, rid: uuid.UUID) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        cur = conn.execute(
            "SELECT status, failure_reason, reservation_ended, create_job_resends,"
            " (SELECT count(*) FROM allocations a"
            "  WHERE a.reservation_id = r.reservation_id) AS slots,"
            " (SELECT array_agg(to_status ORDER BY event_id) FROM reservation_events e"
            "  WHERE e.reservation_id = r.reservation_id) AS history"
            " FROM reservations r WHERE reservation_id = %s",
            (rid,),
        )
        names = [c.name for c in cur.description or []]
        return dict(zip(names, cur.fetchone() or (), strict=True))


def latest_run(url: str) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        outcome, statistics, error = conn.execute(
            "SELECT outcome, statistics, error FROM reconciler_runs WHERE reconciler = 'sweeper'"
            " ORDER BY run_id DESC LIMIT 1"
        ).fetchone()  # type: ignore[misc]
    return {"outcome": outcome, "statistics": statistics, "error": error}


def test_an_active_reservation_whose_execution_was_aborted_is_ended_released_and_cleaned(world):
    dead = insert(world.url, "active", slots=4)
    alive = insert(world.url, "active", slots=2)
    world.objects.add(dead)
    world.objects.add(alive)
    world.stepfunctions.executions = {execution_of(dead): "ABORTED", execution_of(alive): "RUNNING"}

    result = world.run()

    assert result.outcome == "succeeded" and result.repairs == 1 + len(KINDS)
    row = reservation(world.url, dead)
    assert row["status"] == "failed" and row["reservation_ended"] is not None
    assert row["failure_reason"] == (
        "its execution ended (ABORTED) without tearing down; cleaned up by the sweeper"
    )
    assert row["slots"] == 0 and row["history"][-1] == "failed"
    assert world.objects.of(dead) == 0
    assert world.objects.of(alive) == len(KINDS) and reservation(world.url, alive)["slots"] == 2
    assert world.stepfunctions.described == [execution_of(dead)], "only the one not running"
    assert world.allocations == 1, "the released slots go to the next in queue at once"
    run = latest_run(world.url)
    assert run["outcome"] == "succeeded"
    assert {
        k: run["statistics"][k] for k in ("reservations_ended", "slots_released", "objects_deleted")
    } == {
        "reservations_ended": 1,
        "slots_released": 4,
        "objects_deleted": len(KINDS),
    }


def hold_disk(url: str, rid: uuid.UUID) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO disks (user_id, disk_name, reservation_id) VALUES ('alice', %s, %s)",
            (f"work-{str(rid)[:8]}", rid),
        )


def test_a_disk_is_saved_by_the_sweeper_only_once_its_holders_execution_is_dead(world):
    just_ended = insert(world.url, "active")  # the run ends it: its execution was stopped
    not_saved = insert(world.url, "active")  # `Disk not saved`: ended, execution FAILED
    end_row(world.url, not_saved, "1 hour")
    saving = insert(world.url, "active")  # ended, its execution in `Save the disk`
    end_row(world.url, saving, "1 second")
    live = insert(world.url, "active")  # holds its disk while active
    for rid in (just_ended, not_saved, saving, live):
        hold_disk(world.url, rid)
    world.stepfunctions.executions = {
        execution_of(just_ended): "ABORTED",
        execution_of(not_saved): "FAILED",
        execution_of(saving): "RUNNING",
        execution_of(live): "RUNNING",
    }

    result = world.run()

    assert sorted(world.disk_steps) == sorted([just_ended, not_saved])
    assert result.statistics["disks_waiting"] == 2 and result.repairs == 1
    world.disk_step = "freed"
    world.disk_steps.clear()
    result = world.run()
    assert sorted(world.disk_steps) == sorted([just_ended, not_saved])
    assert result.statistics["disks_freed"] == 2 and result.repairs == 2


def test_a_disk_step_that_raises_is_counted_and_the_run_goes_on(world):
    first, second = insert(world.url, "active"), insert(world.url, "active")
    for rid in (first, second):
        end_row(world.url, rid, "1 hour")
        hold_disk(world.url, rid)
    world.stepfunctions.executions = {execution_of(first): "FAILED"}  # second: not found
    calls: list[uuid.UUID] = []

    def save_disk(reservation_id: uuid.UUID) -> str:
        calls.append(reservation_id)
        if len(calls) == 1:
            raise RuntimeError("DeleteVolume refused")
        return "freed"

    world.save_disk = save_disk  # type: ignore[method-assign]
    result = world.run()
    assert sorted(calls) == sorted([first, second])
    assert result.statistics["errors"] == 1 and result.statistics["disks_freed"] == 1


def test_a_queued_reservation_whose_execution_is_gone_is_ended(world):
    lost = insert(world.url, "queued")
    result = world.run()
    assert reservation(world.url, lost)["failure_reason"].startswith(
        "its execution ended (not found)"
    )
    assert result.statistics["reservations_ended"] == 1


def end_row(url: str, rid: uuid.UUID, ago: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE reservations SET failure_reason = 'ended by a test',"
            " status = 'expired', reservation_ended = now() - %s::interval"
            " WHERE reservation_id = %s",
            (ago, rid),
        )


def test_objects_of_long_ended_and_unknown_reservations_are_deleted_nothing_else(world):
    ended = insert(world.url, "active")
    end_row(world.url, ended, "2 minutes")
    unknown = uuid.uuid4()
    world.objects.add(ended)
    world.objects.add(unknown)
    result = world.run()
    assert world.objects.of(ended) == 0 and world.objects.of(unknown) == 0
    assert (
        result.statistics["objects_deleted"] == 2 * len(KINDS)
        and result.statistics["reservations_ended"] == 0
    )
    assert world.allocations == 0, "nothing was released"


def test_a_share_volume_whose_claim_is_gone_is_deleted_once_its_reservation_ended(world):
    """The review's finding: a `Released` share PersistentVolume (cluster-scoped) was found
    only through its claim, so once the claim was gone it stayed forever."""
    ended, just_ended, alive = (insert(world.url, "active") for _ in range(3))
    end_row(world.url, ended, "2 minutes")
    end_row(world.url, just_ended, "10 seconds")
    unknown = uuid.uuid4()
    world.share_volumes = {str(r) for r in (ended, just_ended, alive, unknown)}
    world.stepfunctions.executions = {execution_of(alive): "RUNNING"}
    result = world.run()
    assert world.share_volumes == {str(just_ended), str(alive)}
    assert result.statistics["objects_deleted"] == 2
    assert reservation(world.url, alive)["status"] == "active"


def test_objects_of_a_reservation_that_ended_within_the_margin_are_left_to_its_tear_down(world):
    """Its tear down may still be running (it ended the row after deleting, or a create whose
    response was lost lands late): the next run judges it, nothing counted now."""
    just_ended = insert(world.url, "active")
    end_row(world.url, just_ended, "10 seconds")
    world.objects.add(just_ended)
    result = world.run()
    assert world.objects.of(just_ended) == len(KINDS)
    assert result.repairs == 0 and result.statistics["objects_deleted"] == 0
    later = Limits(pending_after_seconds=300, max_create_resends=2, ended_margin_seconds=5)
    assert world.run(later).statistics["objects_deleted"] == len(KINDS)
    assert world.objects.of(just_ended) == 0


def test_a_tear_down_between_the_listing_and_the_row_read_is_not_counted_as_a_repair(world):
    """The sequence of the fault campaign's overlapping sweep: objects listed, then the
    lifecycle deletes them and ends the row, then the sweep reads the rows."""
    rid = insert(world.url, "active")
    world.stepfunctions.executions = {execution_of(rid): "RUNNING"}
    world.objects.add(rid)
    labelled = world.objects.labelled
    kinds_listed: list[str] = []

    def listing_then_tear_down(kind: str) -> list[dict[str, Any]]:
        items = labelled(kind)
        kinds_listed.append(kind)
        if len(kinds_listed) == len(KINDS):  # the listing is over: the tear down runs
            for each in KINDS:
                world.objects.items[each] = []
            end_row(world.url, rid, "0 seconds")
        return items

    world.objects.labelled = listing_then_tear_down  # type: ignore[method-assign]
    result = world.run()
    assert result.repairs == 0
    assert result.statistics["objects_seen"] == len(KINDS)
    assert result.statistics["objects_deleted"] == 0
    assert result.statistics["objects_already_gone"] == 0, "no delete was even tried"


def test_a_delete_of_an_object_gone_already_is_counted_apart_not_as_a_repair(world):
    """A reservation that ended long ago, whose objects go between the listing and the
    deletes (another hand deleted them): 404 is not a repair."""
    ended = insert(world.url, "active")
    end_row(world.url, ended, "1 hour")
    world.objects.add(ended)
    rows = world.objects.labelled

    def listed_then_gone(kind: str) -> list[dict[str, Any]]:
        items = rows(kind)
        world.objects.items[kind] = []
        return items

    world.objects.labelled = listed_then_gone  # type: ignore[method-assign]
    result = world.run()
    assert result.repairs == 0
    assert result.statistics["objects_already_gone"] == len(KINDS)


def test_a_clean_world_needs_no_repair(world):
    alive = insert(world.url, "preparing", slots=1)
    world.objects.add(alive)
    world.stepfunctions.executions = {execution_of(alive): "RUNNING"}
    result = world.run()
    assert result.repairs == 0 and world.stepfunctions.described == []
    assert latest_run(world.url)["statistics"]["live_reservations"] == 1


def test_a_stuck_pending_reservation_gets_its_job_again_then_ends_after_the_last_try(world):
    stuck = insert(world.url, "pending", execution=False, age="10 minutes")
    young = insert(world.url, "pending", execution=False, age="1 minute")

    first = world.run()
    assert first.statistics["create_jobs_resent"] == 1
    (message,) = world.sqs.sent
    job = parse_job(message["MessageBody"])
    assert job.kind == "create_reservation" and job.reservation_id == stuck
    assert reservation(world.url, stuck)["create_job_resends"] == 1

    world.run()  # at once: the next try waits for another interval
    assert len(world.sqs.sent) == 1

    def age_the_last_send() -> None:
        with psycopg.connect(world.url, autocommit=True) as conn:
            conn.execute(
                "UPDATE reservations SET create_job_resent_at = now() - interval '6 minutes'"
                " WHERE reservation_id = %s",
                (stuck,),
            )

    age_the_last_send()
    world.run()
    assert len(world.sqs.sent) == 2 and reservation(world.url, stuck)["create_job_resends"] == 2
    age_the_last_send()
    last = world.run()
    row = reservation(world.url, stuck)
    assert len(world.sqs.sent) == 2 and last.statistics["reservations_ended"] == 1
    assert row["status"] == "failed" and "sent 3 times" in row["failure_reason"]
    assert reservation(world.url, young)["status"] == "pending"
    assert reservation(world.url, young)["create_job_resends"] == 0


def test_a_resend_is_not_counted_on_a_row_an_execution_took_meanwhile(world):
    started = insert(world.url, "pending", execution=False, age="10 minutes")
    with psycopg.connect(world.url, autocommit=True) as conn:
        conn.execute(
            "UPDATE reservations SET execution_arn = 'arn', status = 'queued'"
            " WHERE reservation_id = %s",
            (started,),
        )
        counted = SweeperRepository(conn).record_resends([started])
    assert counted == []
    assert reservation(world.url, started)["create_job_resends"] == 0


def test_the_end_leaves_a_row_that_moved_on(world):
    moved = insert(world.url, "active")
    with psycopg.connect(world.url, autocommit=True) as conn:
        ended = SweeperRepository(conn).end(
            EndReservation(moved, "another", ReservationStatus.FAILED, "x")
        )
    assert ended is False and reservation(world.url, moved)["status"] == "active"


def test_a_run_while_another_holds_the_lock_is_skipped(world):
    with psycopg.connect(world.url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (LOCK_KEY,))
        result = world.run()
    assert result.outcome == "skipped"
    assert latest_run(world.url)["outcome"] == "skipped"
    assert world.run().outcome == "succeeded", "the lock went with the holder's session"


def test_two_concurrent_runs_one_is_skipped(world):
    """The first run is held inside its cluster listing while the second starts."""
    listing, release = threading.Event(), threading.Event()
    labelled = world.objects.labelled

    def slow_labelled(kind: str) -> list[dict[str, Any]]:
        listing.set()
        release.wait(5)
        return labelled(kind)

    world.objects.labelled = slow_labelled  # type: ignore[method-assign]
    outcomes: list[str] = []
    first = threading.Thread(target=lambda: outcomes.append(world.run().outcome))
    first.start()
    assert listing.wait(5)
    world.objects.labelled = labelled  # type: ignore[method-assign]
    outcomes.append(world.run().outcome)
    release.set()
    first.join(10)
    assert sorted(outcomes) == ["skipped", "succeeded"]


def test_a_failed_read_is_recorded_and_raised_and_frees_the_lock(world):
    world.objects.fail_lists = True
    with pytest.raises(KubernetesUnavailable):
        world.run()
    run = latest_run(world.url)
    assert run["outcome"] == "failed" and "KubernetesUnavailable" in run["error"]
    world.objects.fail_lists = False
    assert world.run().outcome == "succeeded"


def test_the_rows_read_are_the_live_ones_and_when_the_listed_ended_ones_ended(world):
    live = insert(world.url, "queued")
    ended = insert(world.url, "queued")
    listed_ended = insert(world.url, "queued")
    for rid in (ended, listed_ended):
        end_row(world.url, rid, "3 minutes")
    with psycopg.connect(world.url) as conn:
        rows = SweeperRepository(conn).rows([listed_ended, live, uuid.uuid4()])
        (ended_at,) = conn.execute(
            "SELECT reservation_ended FROM reservations WHERE reservation_id = %s",
            (listed_ended,),
        ).fetchone()  # type: ignore[misc]
    assert [r.reservation_id for r in rows.live] == [live]
    assert rows.ended_at == {str(listed_ended): ended_at}


def park(
    url: str, rid: uuid.UUID, token: str, *, cancel_ago: str | None = None, change: bool = False
) -> None:
    """Parked on `token`, with a cancel asked `cancel_ago` or a change not applied."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE reservations SET task_token = %s,"
            " cancel_requested_at = now() - %s::interval,"
            " change_generation = change_generation + %s WHERE reservation_id = %s",
            (token, cancel_ago, int(change), rid),
        )


def test_unheard_requests_wake_their_executions_once_and_a_refused_wake_is_an_error(world):
    cancelled = insert(world.url, "active")  # its cancel job dead-lettered ten minutes ago
    park(world.url, cancelled, "t-cancel", cancel_ago="10 minutes")
    changed = insert(world.url, "active")  # its change job was lost
    park(world.url, changed, "t-change", change=True)
    moved_on = insert(world.url, "active")  # woken by the consumer meanwhile: token closed
    park(world.url, moved_on, "t-closed", cancel_ago="1 hour")
    throttled = insert(world.url, "queued")
    park(world.url, throttled, "t-throttled", cancel_ago="1 hour")
    fresh = insert(world.url, "active")  # the consumer's own wake is on its way
    park(world.url, fresh, "t-fresh", cancel_ago="0 seconds")
    for rid in (cancelled, changed, moved_on, throttled, fresh):
        world.stepfunctions.executions[execution_of(rid)] = "RUNNING"
    world.stepfunctions.tokens.update(
        {"t-cancel": None, "t-change": None, "t-throttled": "ThrottlingException", "t-fresh": None}
    )

    result = world.run()

    assert sorted(world.stepfunctions.woken) == [
        ("t-cancel", '{"outcome": "cancel"}'),
        ("t-change", '{"outcome": "changed"}'),
    ]
    assert result.statistics["executions_woken"] == 2 and result.repairs == 2
    assert result.statistics["errors"] == 1, "the throttled wake, tried again next run"
    assert result.statistics["reservations_ended"] == 0
    with psycopg.connect(world.url) as conn:
        wakes = conn.execute("SELECT reservation_id FROM change_wakes").fetchall()
    assert wakes == [(changed,)], "a change wake counts against the bound"

    world.stepfunctions.tokens["t-change"] = None  # parked again before applying it
    again = world.run()
    assert again.statistics["executions_woken"] == 0, "within the bound: not woken twice"
