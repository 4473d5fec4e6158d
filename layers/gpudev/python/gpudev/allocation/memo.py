"""The last plan of each GPU type, reused by a later pass whose inputs for that type are the
same: in steady state (nothing arrived, ended or moved) the ETA replay of a long queue is
most of a pass's time, and it would only compute the same starts again.

A plan is a pure function of its inputs and `now` (plan.py). With the same nodes, holdings,
queue, probe and allowance, a plan made at `planned_at` is the plan at a later `now` when:

- it granted nothing (the probe included): nothing fits now, and `now` only makes backfill
  stricter (a request protects the head once its expected end passes the shadow time), so
  nothing fits later either;
- every start it found is after the later `now`: the replay's clock starts at `now` and
  moves to each end time it waits for, so when every start was an end time later than both
  nows, the replay meets the same end times and finds the same starts.

Then only the ETAs change (a start less the later `now`). Anything else is planned afresh.
One entry per GPU type; a memo may be shared by passes on several threads (each entry is
replaced whole, and any entry is valid for the inputs it holds).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from gpudev.allocation.values import TypeDecisions, Wait


class _Entry(NamedTuple):
    inputs: Any
    planned_at: float
    decided: TypeDecisions


class PlanMemo:
    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self.reused = 0  # GPU types whose plan was reused (the benchmark prints it)

    def decide(
        self,
        gpu_type: str,
        inputs: Any,
        now: float,
        plan_type: Callable[[], TypeDecisions],
    ) -> TypeDecisions:
        """The type's decisions at `now`: reused when the entry allows it, else planned."""
        entry = self._entries.get(gpu_type)
        if entry is not None and entry.inputs == inputs:
            reused = _at(entry, now)
            if reused is not None:
                self.reused += 1
                return reused
        decided = plan_type()
        self._entries[gpu_type] = _Entry(inputs, now, decided)
        return decided


def _at(entry: _Entry, now: float) -> TypeDecisions | None:
    """The entry's decisions at `now`, or None when they may differ (see the module)."""
    planned_at, decided = entry.planned_at, entry.decided
    if now == planned_at:
        return decided
    if now < planned_at or decided.grants:
        return None
    etas = [wait.eta_seconds for wait in decided.waits]
    if decided.probe_eta is not None:
        etas.append(decided.probe_eta)
    known = [eta for eta in etas if eta is not None]
    # planned_at + eta is the start found (exact: both are moments of this century)
    if known and planned_at + min(known) <= now:
        return None
    return TypeDecisions(
        [],
        [
            Wait(r, position, None if eta is None else planned_at + eta - now)
            for r, position, eta in decided.waits
        ],
        None if decided.probe_eta is None else planned_at + decided.probe_eta - now,
    )
