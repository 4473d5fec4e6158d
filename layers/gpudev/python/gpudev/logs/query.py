"""What a caller may ask of a reservation's log, checked before anything is read (pure).

`since` is a duration back from now (`30s`, `10m`, `2h`, `1d`) or an ISO 8601 time; `node`
a node index of the reservation; `limit` bounded by the route; `next` the opaque token of a
page, which carries the query it continues (node, start, CloudWatch's own token) so a later
page reads the same streams from the same start. Every refusal is InvalidRequest naming the
parameter (422, like every other parameter of the API)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from gpudev.errors import InvalidRequest, shown

_DURATION = re.compile(r"^([1-9][0-9]{0,5})([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# Longer than any retention the log group can be given a reason to have: a year.
LONGEST_SINCE = timedelta(days=366)
# A time a little ahead of the API's clock is a node's clock running ahead (a follower asks
# from near the last line's time): taken as it is (CloudWatch has no lines from then yet, so
# the page is empty), not refused.
CLOCK_SKEW = timedelta(minutes=5)
SINCE_ALLOWED = (
    "a duration back from now (30s, 10m, 2h, 1d; at most 366d) or an ISO 8601 time of the "
    "last 366 days"
)
NEXT_ALLOWED = "the `next` of the page before, unchanged"


def parse_since(text: str, now: datetime) -> datetime:
    """The moment `since` names: `now` less a duration, or an ISO 8601 time (UTC when it
    names no zone). Never in the future (beyond CLOCK_SKEW: up to it, the time as given),
    never more than LONGEST_SINCE ago (an ISO time before 1970 is a negative CloudWatch
    timestamp, which CloudWatch refuses)."""
    duration = _DURATION.match(text)
    if duration:
        amount = timedelta(seconds=int(duration[1]) * _UNIT_SECONDS[duration[2]])
        if amount > LONGEST_SINCE:
            raise _bad_since(text, "is longer than 366 days")
        return now - amount
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise _bad_since(text, "is neither a duration nor an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if moment > now + CLOCK_SKEW:
        raise _bad_since(text, "is in the future")
    if moment < now - LONGEST_SINCE:
        raise _bad_since(text, "is more than 366 days ago")
    return moment


def _bad_since(text: str, why: str) -> InvalidRequest:
    return InvalidRequest(f"since {shown(text)} {why}", field="since", allowed=SINCE_ALLOWED)


@dataclass(frozen=True)
class PageToken:
    """Where the next page starts: the query of the first page, and CloudWatch's token."""

    reservation_id: str
    node: int | None
    start_ms: int | None
    cloudwatch: str

    def encode(self) -> str:
        body = {"r": self.reservation_id, "n": self.node, "s": self.start_ms}
        body["t"] = self.cloudwatch
        raw = json.dumps(body, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> PageToken:
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            body = json.loads(raw)
            token = cls(str(body["r"]), body["n"], body["s"], str(body["t"]))
        except (binascii.Error, ValueError, KeyError, TypeError):
            raise _bad_next("is not a token this API returned") from None
        if not (token.node is None or _whole(token.node)):
            raise _bad_next("is not a token this API returned")
        if not (token.start_ms is None or _whole(token.start_ms)):
            raise _bad_next("is not a token this API returned")
        return token


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _bad_next(why: str) -> InvalidRequest:
    return InvalidRequest(f"next {why}", field="next", allowed=NEXT_ALLOWED)


@dataclass(frozen=True)
class LogQuery:
    """One page's query, checked against the reservation it reads."""

    node: int | None
    start_ms: int | None
    limit: int
    cloudwatch_token: str | None = None

    @classmethod
    def of(
        cls,
        reservation_id: str,
        total_nodes: int,
        *,
        node: int | None,
        since: str | None,
        limit: int,
        next_token: str | None,
        now: datetime,
    ) -> LogQuery:
        """The query a request asks for: a first page (node, since), or the page after one
        (`next` alone, or with the same node)."""
        if node is not None and not 0 <= node < total_nodes:
            nodes = "node 0" if total_nodes == 1 else f"nodes 0 to {total_nodes - 1}"
            raise InvalidRequest(
                f"node {node}: the reservation has {nodes}", field="node", allowed=nodes
            )
        if next_token is None:
            start = None if since is None else parse_since(since, now)
            start_ms = None if start is None else int(start.timestamp() * 1000)
            return cls(node, start_ms, limit)
        if since is not None:
            raise _bad_next(
                "continues the query that returned it: give `since` on the first page only"
            )
        token = PageToken.decode(next_token)
        if token.reservation_id != reservation_id:
            raise _bad_next("belongs to another reservation's log")
        if node is not None and node != token.node:
            raise _bad_next("belongs to another node's log")
        if token.node is not None and token.node >= total_nodes:
            raise _bad_next("is not a token this API returned")
        return cls(token.node, token.start_ms, limit, token.cloudwatch)

    def next_token(self, reservation_id: str, cloudwatch: str | None) -> str | None:
        if cloudwatch is None:
            return None
        return PageToken(reservation_id, self.node, self.start_ms, cloudwatch).encode()
