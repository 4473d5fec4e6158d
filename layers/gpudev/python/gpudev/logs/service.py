"""A page of a reservation's pod output, for its owner (or an operator, through the finder
the operators' route hands in).

The reservation is found as every read of one is (`find_reservation`: the owner's only,
another user's is the 404 of a missing one), then its pods' streams are read with the
reader the route hands in. Added users are not readers: their GitHub login is what the
owner typed, and a caller's own GitHub name is self-declared, so nothing ties an API caller
to an added login (docs/logs.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gpudev.cluster.failure_log import stored_text
from gpudev.cluster.names import Names
from gpudev.logs.cloudwatch import PodLogReader
from gpudev.logs.query import LogQuery
from gpudev.logs.schemas import LogLine, LogPage
from gpudev.logs.streams import stream_name, stream_prefix
from gpudev.reservations.service import ReservationFinder, find_reservation

if TYPE_CHECKING:
    import psycopg

    from gpudev.identity import Caller

# A line is at most 256 KB in CloudWatch; 500 of them would pass Lambda's 6 MB answer.
MESSAGE_CHARACTERS = 4096


def reservation_logs(
    conn: psycopg.Connection[Any],
    caller: Caller,
    id_or_prefix: str,
    reader: PodLogReader,
    *,
    node: int | None,
    since: str | None,
    limit: int,
    next_token: str | None,
    now: datetime | None = None,
    find: ReservationFinder = find_reservation,
) -> LogPage:
    """`find`: the owner's finder, or the operators' (`find_any_reservation`) for their
    route: one read, one answer shape."""
    reservation = find(conn, caller, id_or_prefix)
    rid = str(reservation.reservation_id)
    query = LogQuery.of(
        rid,
        reservation.total_nodes,
        node=node,
        since=since,
        limit=limit,
        next_token=next_token,
        now=now or datetime.now(UTC),
    )
    names = Names.of(reservation)
    pods = [names.pod(rank) for rank in range(reservation.total_nodes)]
    return pod_log_page(reader, rid, pods, query)


def pod_log_page(
    reader: PodLogReader, reservation_id: str, pods: list[str], query: LogQuery
) -> LogPage:
    """One page of the streams of `pods` (by node index), or of node `query.node`'s only."""
    ranks = range(len(pods)) if query.node is None else [query.node]
    node_of = {stream_name(reservation_id, pods[rank]): rank for rank in ranks}
    streams = reader.existing_streams(stream_prefix(reservation_id), set(node_of))
    if not streams:
        return LogPage(lines=[], limit=query.limit, next=None)
    raw = reader.page(streams, query.start_ms, query.limit, query.cloudwatch_token)
    lines = [_line(event, node_of) for event in raw.events]
    token = query.next_token(reservation_id, raw.next_token)
    return LogPage(lines=lines, limit=query.limit, next=token)


def _line(event: dict[str, Any], node_of: dict[str, int]) -> LogLine:
    # Control characters as U+FFFD: a line reaches the owner's terminal (failure_log.py).
    message = stored_text(str(event.get("message", "")).rstrip("\n"))
    return LogLine(
        timestamp=datetime.fromtimestamp(event["timestamp"] / 1000, UTC),
        node=node_of.get(event.get("logStreamName", ""), 0),
        message=message[:MESSAGE_CHARACTERS],
        truncated=len(message) > MESSAGE_CHARACTERS,
        id=str(event.get("eventId", "")),
    )
