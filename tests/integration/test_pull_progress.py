"""A status line that only counts on (`pulling image X (40 s)` after `(30 s)`) is written to
the row but adds no timeline entry (sql/lifecycle/progress.sql): a 15-minute cold pull
leaves one entry in `show`'s timeline, not ninety."""

from __future__ import annotations

from typing import Any

import psycopg

from gpudev.repositories import LifecycleRepository, ReservationsRepository
from tests.integration.test_repositories import _new_reservation, _submit
from tests.integration.test_repositories import alice as alice  # the fixture


def test_a_counting_pull_line_updates_the_row_and_records_one_timeline_entry(
    db: psycopg.Connection[Any], alice: str
):
    repo, rows = ReservationsRepository(db), LifecycleRepository(db)
    rid = _submit(repo, _new_reservation(alice)).reservation_id
    db.execute("UPDATE reservations SET status = 'preparing' WHERE reservation_id = %s", (rid,))
    lines = [
        "pulling image dev:1 (0 s)",
        "pulling image dev:1 (10 s)",
        "pulling image dev:1 (20 s)",
        "waiting for sshd: pod p",
        "pulling image dev:2 (5 s)",
    ]
    written = [rows.progress(rid, line) for line in lines]
    assert all(w is not None for w in written)
    assert written[2] is not None and written[2].current_detailed_status == lines[2]
    startup = [e.detail for e in repo.events(rid) if e.kind == "startup"]
    assert startup == [lines[0], lines[3], lines[4]]
