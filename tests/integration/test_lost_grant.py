"""Issue #12, item 5: a grant is never lost between two attempts of `Wait for capacity`.

The sequence: the state parks token T1, then that attempt fails (its Lambda timed out, say)
and Step Functions retries it with a new token T2. A pass that runs in between grants the
reservation and signals T1: the token is closed, but the execution is running, so the pass
counts the grant as told. Before the fix nobody woke T2, and the GPUs sat idle until the
48-hour queue timeout; now parking finds the grant and wakes its own token."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import psycopg

from gpudev.allocation.service import Allocator, AllocatorReport
from gpudev.cluster.vocabulary import Node
from gpudev.lifecycle.keys import GithubKeys
from gpudev.lifecycle.payloads import WaitForCapacity
from gpudev.lifecycle.queueing import wait_for_capacity
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.settings import LifecycleSettings
from gpudev.signals import Wake

NODE = Node("h100-0", "h100", True, False, 8)
SETTINGS = LifecycleSettings()
GRANTED = Wake(outcome="granted")


@dataclass
class StepFunctions:
    """Task tokens as Step Functions keeps them: a closed token refuses a send."""

    closed: set[str] = field(default_factory=set)
    woken: list[tuple[str, Wake]] = field(default_factory=list)

    def wake(self, task_token: str, wake: Wake) -> bool:
        if task_token in self.closed:
            return False
        self.woken.append((task_token, wake))
        self.closed.add(task_token)
        return True

    def execution_running(self, execution_arn: str | None) -> bool:
        return True  # retrying `Wait for capacity`


@dataclass
class OneNodeLifecycle(Lifecycle):
    """The lifecycle with the cluster read replaced by one 8-GPU node."""

    def allocate(self) -> AllocatorReport:
        return Allocator(self.conn, self.signals, self.settings).run([NODE], [], set())


def _park(lifecycle: Lifecycle, reservation_id: uuid.UUID, task_token: str) -> None:
    wait_for_capacity(
        lifecycle, WaitForCapacity(reservation_id=reservation_id, task_token=task_token)
    )


def _queued(conn: psycopg.Connection[Any]) -> uuid.UUID:
    reservation_id = uuid.uuid4()
    conn.execute(
        "INSERT INTO reservations (reservation_id, user_id, status, gpu_type, gpu_count,"
        " total_nodes, duration_hours, execution_arn)"
        " VALUES (%s, 'alice', 'queued', 'h100', 8, 1, 1, %s)",
        (reservation_id, f"arn:aws:states:us-east-2:123456789012:execution:r:{reservation_id}"),
    )
    return reservation_id


def _release(conn: psycopg.Connection[Any], reservation_id: uuid.UUID) -> None:
    conn.execute("DELETE FROM allocations WHERE reservation_id = %s", (reservation_id,))
    conn.execute(
        "UPDATE reservations SET failure_reason = 'ended by a test',"
        " status = 'cancelled', reservation_ended = now(),"
        " task_token = NULL WHERE reservation_id = %s",
        (reservation_id,),
    )


def _alices_lifecycle(conn: psycopg.Connection[Any]) -> tuple[StepFunctions, OneNodeLifecycle]:
    """The user alice, and a lifecycle on one node whose Step Functions records wakes."""
    conn.execute("INSERT INTO users (username, principal_arn) VALUES ('alice', 'arn:a')")
    sfn = StepFunctions()
    lifecycle = OneNodeLifecycle(
        conn, None, sfn, GithubKeys(), SETTINGS, "gpu-dev", "gpu-dev-profiling"
    )  # type: ignore[arg-type]
    return sfn, lifecycle


def test_a_grant_signalled_to_a_failed_attempts_token_wakes_the_retried_attempt(
    fresh_database,
):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        sfn, lifecycle = _alices_lifecycle(conn)
        holder = _queued(conn)
        _park(lifecycle, holder, "holder-token")
        assert sfn.woken == [("holder-token", GRANTED)]

        waiting = _queued(conn)
        _park(lifecycle, waiting, "T1")  # parks T1: the node is taken
        sfn.closed.add("T1")  # ... and that attempt fails: Step Functions will retry it

        _release(conn, holder)
        report = lifecycle.allocate()  # the scheduled pass, between the two attempts
        assert report.granted == [waiting] and report.signalled == 1  # "told" through T1
        _park(lifecycle, waiting, "T2")  # the retried attempt parks T2
        lifecycle.allocate()  # and the passes go on

        assert ("T2", GRANTED) in sfn.woken
        assert sfn.woken.count(("T2", GRANTED)) == 1


def test_a_grant_made_after_the_retried_attempt_parked_goes_to_its_token(fresh_database):
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        sfn, lifecycle = _alices_lifecycle(conn)
        holder = _queued(conn)
        _park(lifecycle, holder, "holder-token")
        waiting = _queued(conn)
        _park(lifecycle, waiting, "T1")
        sfn.closed.add("T1")
        _park(lifecycle, waiting, "T2")  # nothing granted yet: T2 just waits
        assert [token for token, _ in sfn.woken] == ["holder-token"]

        _release(conn, holder)
        lifecycle.allocate()
        assert sfn.woken[-1] == ("T2", GRANTED)
