"""Free slots per node for the planner (plan.py), bucketed by free count, so that a fit
costs O(slots per node) rather than O(nodes). Best fit: the fullest node that still has room,
the first by name among equals.

Nodes are numbers, their places in name order (the planner maps names to numbers and back):
list indexing and integer comparison cost less than dictionaries and strings in the ETA
replay, which moves nodes between buckets for every waiting reservation of a pass. Nodes with
no free slot are in no bucket: on a busy cluster that is most nodes, and keeping them in a
sorted list cost a memory move of the whole list on every take and give; no request of one
slot or more fits there, and `fit` lists them when a request asks for none.

A multinode request takes whole nodes of one fabric only (`NodeCapacity.fabric`: one zone
and placement group, where EFA reaches): the first fabric, in node order, to have as many
whole nodes as it asks, and in it its first ones (docs/multinode.md)."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpudev.allocation.values import Request


class Pool:
    def __init__(self, capacity: list[int], free: list[int], fabrics: list[int] | None = None):
        self.capacity = capacity  # slots per node
        self.free = list(free)  # free slots per node
        # per node, its fabric's number; None: all nodes share one (no multinode split)
        self.fabrics = fabrics
        self.largest = max(capacity, default=0)
        # per free count from 1, its nodes in order (buckets[0] stays empty)
        self.buckets: list[list[int]] = [[] for _ in range(self.largest + 1)]
        for node, count in enumerate(self.free):
            if count:
                self.buckets[count].append(node)

    def copy(self) -> Pool:
        return Pool(self.capacity, self.free, self.fabrics)

    def _bucket(self, count: int) -> list[int]:
        """The nodes with `count` free slots, in order."""
        if count:
            return self.buckets[count]
        return [node for node, free in enumerate(self.free) if not free]

    def _move(self, node: int, count: int) -> None:
        had = self.free[node]
        if had:
            bucket = self.buckets[had]
            del bucket[bisect_left(bucket, node)]
        self.free[node] = count
        if count:
            insort(self.buckets[count], node)

    def take(self, node: int, count: int) -> None:
        self._move(node, self.free[node] - count)

    def give(self, node: int, count: int) -> None:
        self._move(node, min(self.capacity[node], self.free[node] + count))

    def fit(self, request: Request, allowed: Callable[[int], bool] | None = None) -> list[int]:
        """Nodes for the request (one per rank), or [] when it does not fit."""
        need = request.slots_per_node
        if request.nodes == 1:
            for count in range(need, self.largest + 1):
                bucket = self._bucket(count)
                if not bucket:
                    continue
                if allowed is None:
                    return [bucket[0]]
                for node in bucket:
                    if allowed(node):
                        return [node]
            return []
        if need > self.largest:
            return []
        whole = [
            node
            for node in self._bucket(need)
            if self.capacity[node] == need and (allowed is None or allowed(node))
        ]
        if self.fabrics is None:
            return whole[: request.nodes] if len(whole) >= request.nodes else []
        members: dict[int, list[int]] = {}
        for node in whole:
            fabric = members.setdefault(self.fabrics[node], [])
            fabric.append(node)
            if len(fabric) == request.nodes:
                return fabric
        return []
