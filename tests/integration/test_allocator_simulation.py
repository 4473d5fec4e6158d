"""A randomized simulation of the allocator against real PostgreSQL: 240 reservations across
GPU and CPU types arrive, are cancelled, extended, finish or fail, while allocator passes run
two at a time from separate connections (as concurrent task functions and the scheduled pass
do). After every step:

- no node holds more slots than it has, and every slot held belongs to a live reservation
  (nothing is left behind by an ending);
- every granted reservation holds exactly its shape (N nodes × GPUs per node; a profiling
  one, N whole nodes);
- a profiling reservation's node holds no other reservation;
- the queue is work-conserving at its head: the oldest waiting reservation of each type does
  not fit in what is free after the pass (a head that fits and waits is a broken FIFO).

About one in five arrivals asks for profiling (no node is dedicated to it here: whole nodes
of the type's own; tests/integration/test_allocator_profiling.py has dedicated ones).
"""

from __future__ import annotations

import random
import threading
import uuid
from typing import Any

import psycopg

from gpudev.allocation.service import Allocator
from gpudev.cluster.vocabulary import Node
from gpudev.settings import LifecycleSettings
from tests.support.signals import AcceptingSignals

SHAPES = {"t4": (4, [1, 2, 4]), "h100": (8, [1, 2, 4, 8, 16]), "cpu-x86": (3, [0])}
NODES = [
    Node(f"{gpu_type}-{i}", gpu_type, True, False, 0 if gpu_type.startswith("cpu") else per_node)
    for gpu_type, (per_node, _) in SHAPES.items()
    for i in range(3)
]


def _pass(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        Allocator(conn, AcceptingSignals(), LifecycleSettings()).run(NODES, [], {"cpu-x86"})  # type: ignore[arg-type]


def _concurrent_passes(url: str) -> None:
    threads = [threading.Thread(target=_pass, args=(url,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _end(conn: psycopg.Connection[Any], reservation_id: uuid.UUID, status: str) -> None:
    with conn.transaction():
        conn.execute("DELETE FROM allocations WHERE reservation_id = %s", (reservation_id,))
        conn.execute(
            "UPDATE reservations SET failure_reason = 'ended by a test',"
            " status = %s, reservation_ended = now(), task_token = NULL"
            " WHERE reservation_id = %s",
            (status, reservation_id),
        )


def _check(conn: psycopg.Connection[Any]) -> None:
    over = conn.execute(
        "SELECT n.node_name FROM cluster_nodes n JOIN allocations a USING (node_name)"
        " GROUP BY n.node_name, n.slots HAVING count(*) > n.slots"
    ).fetchall()
    assert over == []
    leftovers = conn.execute(
        "SELECT DISTINCT r.status FROM allocations a JOIN reservations r USING (reservation_id)"
        " WHERE r.status NOT IN ('queued', 'active')"
    ).fetchall()
    assert leftovers == []
    shapes = conn.execute(
        "SELECT r.reservation_id, r.total_nodes, greatest(r.gpu_count / r.total_nodes, 1),"
        " count(DISTINCT a.node_name), count(*) / count(DISTINCT a.node_name), r.gpu_type,"
        " r.profiling"
        " FROM reservations r JOIN allocations a USING (reservation_id)"
        " GROUP BY r.reservation_id"
    ).fetchall()
    for _, nodes, per_node, held_nodes, held_per_node, gpu_type, profiling in shapes:
        whole = SHAPES[gpu_type][0]
        assert (held_nodes, held_per_node) == (nodes, whole if profiling else per_node)
    shared = conn.execute(
        "SELECT a.node_name FROM allocations a JOIN reservations r USING (reservation_id)"
        " GROUP BY a.node_name"
        " HAVING bool_or(r.profiling) AND count(DISTINCT a.reservation_id) > 1"
    ).fetchall()
    assert shared == [], "a profiling reservation's node holds another reservation"
    free = dict(
        conn.execute(
            "SELECT n.node_name, n.slots - count(a.slot) FROM cluster_nodes n"
            " LEFT JOIN allocations a USING (node_name) GROUP BY n.node_name, n.slots"
        ).fetchall()
    )
    heads = conn.execute(
        "SELECT DISTINCT ON (gpu_type) gpu_type, gpu_count, total_nodes, profiling"
        " FROM reservations"
        " WHERE status = 'queued' AND granted_at IS NULL ORDER BY gpu_type, created_at"
    ).fetchall()
    for gpu_type, gpus, nodes, profiling in heads:
        capacity, _ = SHAPES[gpu_type]
        per_node = capacity if profiling else max(1, gpus // nodes)
        frees = [f for name, f in free.items() if name.startswith(f"{gpu_type}-")]
        if nodes == 1:
            assert max(frees) < per_node, f"{gpu_type} head of {gpus} fits in {frees}"
        else:
            assert sum(f == capacity for f in frees) < nodes, f"{gpu_type} head fits"


def test_random_arrivals_endings_and_concurrent_passes_keep_every_invariant(fresh_database):
    rng = random.Random(2026)
    url = fresh_database
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn)"
            " VALUES ('alice', 'arn:a'), ('bob', 'arn:b')"
        )
        _pass(url)
        created = 0
        while created < 240:
            action = rng.choices(
                ["arrive", "cancel", "extend", "finish", "fail"], weights=[5, 1, 1, 3, 1]
            )[0]
            live = conn.execute(
                "SELECT reservation_id, granted_at IS NOT NULL FROM reservations"
                " WHERE status IN ('queued', 'active')"
            ).fetchall()
            granted = [rid for rid, is_granted in live if is_granted]
            if action == "arrive":
                gpu_type = rng.choice(list(SHAPES))
                gpus = rng.choice(SHAPES[gpu_type][1])
                conn.execute(
                    "INSERT INTO reservations (reservation_id, user_id, status, gpu_type,"
                    " gpu_count, total_nodes, duration_hours, task_token, profiling)"
                    " VALUES (%s, %s, 'queued', %s, %s, %s, %s, 'token', %s)",
                    (
                        uuid.uuid4(),
                        rng.choice(["alice", "bob"]),
                        gpu_type,
                        gpus,
                        2 if gpus == 16 else 1,
                        rng.choice([0.5, 1, 4]),
                        rng.random() < 0.2,
                    ),
                )
                created += 1
            elif action == "cancel" and live:
                _end(conn, rng.choice(live)[0], "cancelled")
            elif action == "extend" and granted:
                conn.execute(
                    "UPDATE reservations SET duration_hours = least(48, duration_hours + 1)"
                    " WHERE reservation_id = %s",
                    (rng.choice(granted),),
                )
            elif action in ("finish", "fail") and granted:
                _end(conn, rng.choice(granted), "expired" if action == "finish" else "failed")
            _concurrent_passes(url)
            _check(conn)
        total = conn.execute("SELECT count(*) FROM reservations").fetchone()
        assert total is not None and total[0] == 240
