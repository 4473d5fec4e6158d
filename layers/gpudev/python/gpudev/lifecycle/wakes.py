"""The bound on change wakes (pure): an execution's history holds 25,000 events, and every
wake of an active execution costs a checkpoint and a park (13 events), so changes (extend,
add-user, Jupyter) wake it at most once per `change_wake_minutes` (LifecycleSettings).

A change within the bound of the last wake (or of the last checkpoint that applied a change)
does not wake it: the checkpoint that applied a change parks no longer than the bound, and
every checkpoint within the bound of one parks only until the bound is over, so the next
checkpoint applies what came meanwhile, all together. docs/security.md "Limits"."""

from __future__ import annotations

import math


def coalesced(seconds_since: float | None, bound_seconds: float) -> bool:
    """Whether a change now is left to the checkpoint due by the end of the bound."""
    return seconds_since is not None and seconds_since < bound_seconds


def park_seconds(
    park: int, *, applied: bool, seconds_since: float | None, bound_seconds: float
) -> int:
    """How long a checkpoint parks: until its next warning or the expiry (`park`), but no
    longer than the bound after a change it applied, or than what is left of the bound of
    an earlier one (so a change coalesced meanwhile waits at most the bound)."""
    if applied:
        left = bound_seconds
    elif coalesced(seconds_since, bound_seconds):
        assert seconds_since is not None
        left = bound_seconds - seconds_since
    else:
        return park
    return max(1, min(park, math.ceil(left)))
