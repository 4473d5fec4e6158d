"""Which reservation the user means: `show`, `cancel` and `connect` take a full id, an id
prefix of at least 8 characters, or the reservation's name.

Something that looks like an id (8 or more hex digits and dashes) is looked up as one first;
otherwise, or when no id matches, it is a name. Among your reservations with that name the
live ones count (a name is often reused once the last one ended); when none is live, the
ended ones do. More than one → an error listing them, so nothing is done to a guess."""

from __future__ import annotations

import re
from typing import Any

from gpudev_cli.client import CliError, SigV4Client
from gpudev_cli.context import LIVE
from gpudev_cli.failures import describe_failure

ID_PREFIX = re.compile(r"^[0-9a-fA-F-]{8,36}$")
PAGE = 500


def find(client: SigV4Client, reference: str) -> dict[str, Any]:
    if ID_PREFIX.match(reference):
        reply = client.call("GET", f"/v1/reservations/{reference}")
        if reply.status == 200:
            return dict(reply.body)
        if reply.status != 404:
            raise CliError(describe_failure(reply))
    named = by_name(client, reference)
    if len(named) == 1:
        return named[0]
    if not named:
        hint = "" if ID_PREFIX.match(reference) else " (ids have at least 8 characters)"
        raise CliError(f"no reservation with the id or name {_shown(reference)}{hint}")
    candidates = ", ".join(
        f"{r['reservation_id'][:8]} ({r['status']}, created {r['created_at'][:16]})" for r in named
    )
    raise CliError(
        f"{len(named)} reservations are named {_shown(reference)}: {candidates}; "
        "give the id instead"
    )


def by_name(client: SigV4Client, name: str) -> list[dict[str, Any]]:
    """Your live reservations named `name`; when none is live, your ended ones."""
    named = [r for r in reservations(client, LIVE) if r.get("name") == name]
    return named or [r for r in reservations(client) if r.get("name") == name]


def reservations(client: SigV4Client, statuses: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every reservation of the caller in `statuses` (all when empty), page by page; the API
    never lists anyone else's."""
    rows: list[dict[str, Any]] = []
    while True:
        query = [f"status={status}" for status in statuses]
        query += [f"limit={PAGE}", f"offset={len(rows)}"]
        page = client.request("GET", "/v1/reservations?" + "&".join(query))["reservations"]
        rows += page
        if len(page) < PAGE:
            return rows


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:40] + "…")
