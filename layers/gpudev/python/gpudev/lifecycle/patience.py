"""How long saving a disk may wait, and how it waits (pure). An execution's history holds
25,000 events and every poll of `Save the disk` costs 9 (a task, a choice, a wait), so the
save polls with a backoff measured from the reservation's end, and hands the disk to the
sweeper once the save has waited `save_patience_seconds`: the sweeper advances it one step
a run, costing no history (docs/disks.md, "Saving a disk").

The backoff is geometric without a counter: each wait is a quarter of the time waited so
far (at least the base, at most the cap), so from the base it grows by 1.25 a poll until the
cap. With the defaults (5 s, 300 s, 4 h) that is 66 polls, 596 events
(tests/unit/test_save_loop_history.py walks the ASL).

A pod that has not gone `pod_release_patience_seconds` after the reservation ended is on a
node that is gone or hung (its kubelet never confirms the deletion): it is deleted with no
grace period and the disk is saved from its volume as it is (a crash-consistent snapshot,
the same as a power cut)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

BACKOFF = 0.25  # each wait is this share of the time waited so far


@dataclass(frozen=True)
class SavePatience:
    base_seconds: int  # the first waits (LifecycleSettings.ready_poll_seconds)
    cap_seconds: int  # the longest wait
    patience_seconds: float  # then the sweeper takes the disk over
    pod_patience_seconds: float  # then a pod still there is deleted with no grace


def next_wait(elapsed: float, patience: SavePatience) -> tuple[Literal["waiting", "handoff"], int]:
    """What the save does after a poll that found it not done, `elapsed` seconds after the
    reservation ended: wait this long and look again, or hand the disk to the sweeper."""
    if elapsed >= patience.patience_seconds:
        return "handoff", 0
    wait = math.ceil(max(0.0, elapsed) * BACKOFF)
    return "waiting", int(min(patience.cap_seconds, max(patience.base_seconds, wait)))


def pod_overdue(elapsed: float, patience: SavePatience) -> bool:
    """Whether a pod still there this long after the reservation ended is let go by force."""
    return elapsed >= patience.pod_patience_seconds
