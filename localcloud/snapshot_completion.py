"""Snapshots that take time: moto completes an EBS snapshot the moment it is created (AWS
takes minutes), so a wait-for-completion loop is never exercised. While installed, every
snapshot created through the EC2 API (CreateSnapshot, CreateSnapshots, CopySnapshot) stays
`pending`, its progress growing from 0% to 99%, for `delay_seconds` of real time after its
creation, then shows moto's own state (`completed`). Snapshots of moto's preloaded AMIs are
left alone.

This patches moto (pinned exactly) at one private place: `Snapshot.status` and
`Snapshot.progress` become properties of the class, reading what moto stores plus the
snapshot's due time, and `EBSBackend.create_snapshot` / `copy_snapshot` are wrapped to
stamp that due time. Every path that reports a snapshot's state (the DescribeSnapshots and
CreateSnapshot responses, the `status` filter, the `snapshot_completed` waiter) reads
those properties. `install` returns the undo; tests/unit/test_snapshot_completion.py guards
the seam.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from moto.ec2.models.elastic_block_store import EBSBackend, Snapshot

_DUE = "_gpudev_completes_at"  # monotonic time the snapshot completes at (absent: at once)
_DURATION = "_gpudev_duration"
_lock = threading.Lock()


def _status(snapshot: Snapshot) -> str:
    stored = str(snapshot.__dict__.get("status", "completed"))
    if stored == "completed" and time.monotonic() < snapshot.__dict__.get(_DUE, 0.0):
        return "pending"
    return stored


def _set_status(snapshot: Snapshot, value: str) -> None:
    # Where moto's own attribute lives: the property hides it while installed, and it is
    # moto's again once uninstalled.
    snapshot.__dict__["status"] = value


def _progress(snapshot: Snapshot) -> str:
    if _status(snapshot) != "pending":
        return "100%"
    duration = snapshot.__dict__.get(_DURATION) or 1.0
    left = snapshot.__dict__.get(_DUE, 0.0) - time.monotonic()
    return f"{min(99, max(0, int(100 * (1 - left / duration))))}%"


class SnapshotCompletion:
    """How long new snapshots stay pending; `delay_seconds` may change at any time (it
    applies to snapshots created afterwards)."""

    def __init__(self, delay_seconds: float = 0.0):
        self.delay_seconds = delay_seconds

    def _stamp(self, snapshot: Snapshot) -> Snapshot:
        if self.delay_seconds > 0 and not getattr(snapshot, "from_ami", None):
            snapshot.__dict__[_DURATION] = self.delay_seconds
            snapshot.__dict__[_DUE] = time.monotonic() + self.delay_seconds
        return snapshot

    def install(self) -> Callable[[], None]:
        """Patch moto for this process; the returned function undoes it."""
        with _lock:
            saved: dict[str, Any] = {
                "status": Snapshot.__dict__.get("status"),
                "progress": Snapshot.__dict__["progress"],
                "create_snapshot": EBSBackend.create_snapshot,
                "copy_snapshot": EBSBackend.copy_snapshot,
            }
            create, copy = saved["create_snapshot"], saved["copy_snapshot"]

            @functools.wraps(create)
            def create_snapshot(backend: EBSBackend, *args: Any, **kwargs: Any) -> Snapshot:
                return self._stamp(create(backend, *args, **kwargs))

            @functools.wraps(copy)
            def copy_snapshot(backend: EBSBackend, *args: Any, **kwargs: Any) -> Snapshot:
                return self._stamp(copy(backend, *args, **kwargs))

            Snapshot.status = property(_status, _set_status)  # type: ignore[assignment]
            Snapshot.progress = property(_progress)  # type: ignore[assignment,method-assign]
            EBSBackend.create_snapshot = create_snapshot  # type: ignore[method-assign,assignment]
            EBSBackend.copy_snapshot = copy_snapshot  # type: ignore[method-assign,assignment]

        def uninstall() -> None:
            with _lock:
                if saved["status"] is None:
                    delattr(Snapshot, "status")
                else:
                    setattr(Snapshot, "status", saved["status"])  # noqa: B010
                setattr(Snapshot, "progress", saved["progress"])  # noqa: B010
                EBSBackend.create_snapshot = saved["create_snapshot"]  # type: ignore[method-assign]
                EBSBackend.copy_snapshot = saved["copy_snapshot"]  # type: ignore[method-assign]

        return uninstall
