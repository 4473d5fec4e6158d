"""What a database given to `python -m localcloud` (DATABASE_URL) still holds of an earlier
run. The local cloud's AWS (moto) and Kubernetes cluster live in memory and start empty, so
reservations and disks kept from an earlier run would point at executions, pods, volumes and
snapshots that no longer exist: such a database is refused. The embedded PostgreSQL needs no
check: it starts clean every time (`EmbeddedPostgres.start(fresh=True)`)."""

from __future__ import annotations

import psycopg

# Rows that name AWS or cluster objects. Checked once migrated: a database never migrated
# holds nothing (its tables do not exist yet).
_MIGRATED = "SELECT to_regclass('public.reservations') IS NOT NULL"
_COUNTS = "SELECT (SELECT count(*) FROM reservations), (SELECT count(*) FROM disks)"


class EarlierRun(RuntimeError):
    """The given database holds rows of an earlier run."""


def refuse_earlier_run(database_url: str) -> None:
    with psycopg.connect(database_url, connect_timeout=5) as conn:
        migrated = conn.execute(_MIGRATED).fetchone()
        row = conn.execute(_COUNTS).fetchone() if migrated and migrated[0] else None
    reservations, disks = row if row is not None else (0, 0)
    if reservations or disks:
        raise EarlierRun(
            f"the database at DATABASE_URL holds {reservations} reservation(s) and {disks}"
            " disk(s) of an earlier run, which point at AWS and cluster objects that do not"
            " exist in a new local cloud (they live in memory); give an empty database, or"
            " unset DATABASE_URL to use the embedded PostgreSQL, which starts clean"
        )
