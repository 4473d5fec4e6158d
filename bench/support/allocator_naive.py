"""bench/allocator.py's baseline: what a per-row implementation of the allocator's pass does."""

from __future__ import annotations

from typing import Any


def naive_pass(conn: Any) -> tuple[int, int]:
    """Per reservation: read free slots of its type, then grant slot by slot or record a
    position (a 15-minutes-per-position guess, as the reference does); one transaction."""
    with conn.transaction():
        return _per_reservation(conn)


def _per_reservation(conn: Any) -> tuple[int, int]:
    queue = conn.execute(
        "SELECT reservation_id, gpu_count, total_nodes FROM reservations"
        " WHERE status = 'queued' AND granted_at IS NULL ORDER BY created_at"
    ).fetchall()
    granted = position = 0
    for reservation_id, gpus, nodes in queue:
        free = conn.execute(
            "SELECT s.node_name, array_agg(s.slot ORDER BY s.slot) FROM node_slots s"
            " JOIN cluster_nodes n USING (node_name)"
            " WHERE n.gpu_type = 'h100' AND n.schedulable AND NOT EXISTS (SELECT 1 FROM"
            " allocations a WHERE a.node_name = s.node_name AND a.slot = s.slot)"
            " GROUP BY s.node_name"
        ).fetchall()
        per_node = gpus // nodes
        fits = [(name, slots) for name, slots in free if len(slots) >= per_node][:nodes]
        if len(fits) == nodes and position == 0:
            for name, slots in fits:
                for slot in slots[:per_node]:
                    conn.execute(
                        "INSERT INTO allocations (node_name, slot, reservation_id)"
                        " VALUES (%s, %s, %s)",
                        (name, slot, reservation_id),
                    )
            conn.execute(
                "UPDATE reservations SET granted_at = now() WHERE reservation_id = %s",
                (reservation_id,),
            )
            granted += 1
        else:
            position += 1
            conn.execute(
                "UPDATE reservations SET queue_position = %s,"
                " estimated_start_at = now() + %s * interval '15 minutes'"
                " WHERE reservation_id = %s",
                (position, position, reservation_id),
            )
    return granted, position
