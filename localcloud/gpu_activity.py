"""Make a reservation's GPUs busy or idle in a running local cloud (`make run`), for tests
and demos of GPU use and idle reclaim (docs/utilisation.md):

    python -m localcloud.gpu_activity REF busy
    python -m localcloud.gpu_activity REF idle

REF is the reservation's id, an 8+ character id prefix, or its name (your live
reservation of that name). Every reservation starts idle. The simulated DCGM exporter
(localcloud/dcgm_exporter.py) reports its GPUs at 60-95 % while busy; the availability
updater reads that at its next run. It finds the cloud through `.local/stack.json`.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psycopg

from localcloud.dcgm_exporter import STATES

STACK = Path(__file__).resolve().parent.parent / ".local" / "stack.json"
ID_CHARACTERS = frozenset("0123456789abcdef-")


class ToolError(Exception):
    pass


def resolve(stack: dict[str, Any], reference: str) -> str:
    """An id or prefix as given; a name becomes the id of the live reservation so named."""
    if len(reference) >= 8 and set(reference.lower()) <= ID_CHARACTERS:
        return reference.lower()
    with psycopg.connect(stack["database_url"]) as conn:
        rows = conn.execute(
            "SELECT reservation_id::text FROM reservations WHERE name = %s"
            " AND status IN ('active', 'preparing')",
            (reference,),
        ).fetchall()
    if len(rows) != 1:
        raise ToolError(
            f"no live reservation named {reference!r}"
            if not rows
            else f"more than one live reservation is named {reference!r}: give its id"
        )
    return str(rows[0][0])


def set_activity(stack: dict[str, Any], reference: str, state: str) -> dict[str, Any]:
    url = stack.get("dcgm_exporter_url")
    if not url:
        raise ToolError("this stack.json names no simulated DCGM exporter: restart `make run`")
    body = json.dumps({"reservation": resolve(stack, reference), "state": state}).encode()
    request = urllib.request.Request(f"{url}/activity", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return dict(json.loads(reply.read()))
    except urllib.error.HTTPError as error:
        raise ToolError(json.loads(error.read() or b"{}").get("message", str(error))) from error
    except OSError as error:
        raise ToolError(
            f"the local cloud does not answer at {url}: is `make run` running?"
        ) from error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localcloud.gpu_activity", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("reservation", metavar="REF", help="id, 8+ character prefix, or name")
    parser.add_argument("state", choices=STATES)
    parser.add_argument("--stack", type=Path, default=STACK, help="the local cloud's stack.json")
    args = parser.parse_args(argv)
    try:
        stack = json.loads(args.stack.read_text())
    except OSError:
        print(f"error: no local cloud described at {args.stack}: start `make run`", file=sys.stderr)
        return 2
    try:
        done = set_activity(stack, args.reservation, args.state)
    except ToolError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"reservation {done['reservation'][:8]}: GPUs {done['state']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
