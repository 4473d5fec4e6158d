"""A grant's time is the pass's time, read once the pass holds its lock: a pass that waited
for another pass never stamps a grant before the reservation it grants was made (usage
accounting reads `granted_at - created_at` as the queue wait)."""

from __future__ import annotations

import gc
import threading
import time
import uuid
from typing import Any

import psycopg

from gpudev.allocation.service import Allocator, AllocatorReport
from gpudev.cluster.vocabulary import Node
from gpudev.settings import LifecycleSettings
from tests.support.signals import AcceptingSignals
from tests.support.submitters import ALICE

NODE = Node("h100-0", "h100", True, False, 8)
PASS_LOCK = "SELECT pg_advisory_xact_lock(7346001)"  # gpudev/sql/allocation/lock.sql


def test_a_pass_that_waited_for_the_lock_grants_at_a_time_after_the_request(
    fresh_database: str,
):
    reports: list[AllocatorReport] = []
    with (
        psycopg.connect(fresh_database, autocommit=True) as setup,
        psycopg.connect(fresh_database) as other_pass,
        psycopg.connect(fresh_database, autocommit=True) as allocator_conn,
    ):
        setup.execute(
            "INSERT INTO users (username, principal_arn) VALUES ('alice', %s)",
            (ALICE.principal_arn,),
        )
        other_pass.execute(PASS_LOCK)  # another pass is running
        allocator = Allocator(allocator_conn, AcceptingSignals(), LifecycleSettings())
        waiting = threading.Thread(
            target=lambda: reports.append(allocator.run([NODE], [], set()))  # type: ignore[arg-type]
        )
        waiting.start()
        time.sleep(0.5)  # the pass is waiting for the lock
        reservation_id = uuid.uuid4()
        setup.execute(
            "INSERT INTO reservations (reservation_id, user_id, status, gpu_type, gpu_count,"
            " total_nodes, duration_hours, task_token)"
            " VALUES (%s, 'alice', 'queued', 'h100', 8, 1, 1, 'token')",
            (reservation_id,),
        )
        other_pass.commit()  # the other pass ends; the waiting one goes on
        waiting.join(timeout=30)
        assert not waiting.is_alive()
        assert reports[0].granted == [reservation_id]
        row = setup.execute(
            "SELECT created_at, granted_at, estimated_start_at FROM reservations"
            " WHERE reservation_id = %s",
            (reservation_id,),
        ).fetchone()
        assert row is not None
        created_at, granted_at, estimated_start_at = row
        assert granted_at >= created_at
        assert estimated_start_at == granted_at


def test_a_pass_plans_with_the_collector_paused_and_leaves_it_on(
    autocommit_conn: psycopg.Connection[Any],
):
    """(`service.collector_paused`: the clock is read inside the pass's transaction.)"""
    seen: list[bool] = []

    def clock() -> float:
        seen.append(gc.isenabled())
        return time.time()

    assert gc.isenabled()
    Allocator(autocommit_conn, AcceptingSignals(), LifecycleSettings(), clock=clock).run(
        [], [], set()
    )
    assert seen == [False] and gc.isenabled()
