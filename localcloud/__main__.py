"""`make run`: start the local cloud and keep it up until Ctrl+C.

Today it runs PostgreSQL with every migration applied; the AWS and Kubernetes stand-ins
join it as the "Local cloud" issue lands. What it started is described in
`.local/stack.json` for scripts and checks.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from pathlib import Path

import psycopg

from gpudev.db.migrations import apply_migrations
from localcloud.postgres import EmbeddedPostgres, PostgresError

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".local"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcloud", description=__doc__)
    parser.add_argument("--postgres-port", type=int, default=None, help="default: a free port")
    args = parser.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        with EmbeddedPostgres(STATE / "postgres" / "data", port=args.postgres_port) as pg:
            with psycopg.connect(pg.url, autocommit=True) as conn:
                applied = apply_migrations(conn, ROOT / "migrations")
            stack = {"database_url": pg.url}
            (STATE / "stack.json").write_text(json.dumps(stack, indent=2) + "\n")
            print(f"postgres    {pg.url}  (migrations applied now: {len(applied)})")
            print(f"stack       {STATE / 'stack.json'}")
            print("Ctrl+C stops everything.", flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                stop.wait()
            print("\nstopping...", flush=True)
    except PostgresError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        (STATE / "stack.json").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
