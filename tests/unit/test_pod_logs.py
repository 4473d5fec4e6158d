"""A reservation's pod output read back (gpudev/logs/): the query a caller may ask (since as a
duration or an ISO time, node within the reservation, the opaque `next` of a page of the
same query), and pages read from CloudWatch Logs (moto) holding only the reservation's own
streams, oldest first, bounded, without control characters."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from gpudev.errors import InvalidRequest
from gpudev.logs.cloudwatch import PodLogReader
from gpudev.logs.query import LogQuery, PageToken, parse_since
from gpudev.logs.service import MESSAGE_CHARACTERS, pod_log_page
from gpudev.logs.streams import stream_name

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
GROUP = "/gpu-dev/pods"
RID = str(uuid.UUID(int=1))
OTHER = str(uuid.UUID(int=2))
PODS = ["gpu-dev-00000000-0", "gpu-dev-00000000-1"]


@pytest.mark.parametrize(
    ("text", "back"),
    [
        ("30s", timedelta(seconds=30)),
        ("10m", timedelta(minutes=10)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("366d", timedelta(days=366)),
    ],
)
def test_since_as_a_duration_is_that_long_before_now(text, back):
    assert parse_since(text, NOW) == NOW - back


def test_a_since_a_little_ahead_is_a_nodes_clock_and_taken():
    assert parse_since("2026-11-27T12:04:00Z", NOW) == NOW + timedelta(minutes=4)


def test_an_iso_since_as_old_as_the_longest_duration_is_taken():
    assert parse_since("2025-11-26T12:00:00Z", NOW) == NOW - timedelta(days=366)


def test_since_as_an_iso_time_is_that_time_and_utc_when_it_names_no_zone():
    assert parse_since("2026-11-27T10:00:00Z", NOW) == datetime(2026, 11, 27, 10, tzinfo=UTC)
    assert parse_since("2026-11-27T10:00:00", NOW) == datetime(2026, 11, 27, 10, tzinfo=UTC)
    assert parse_since("2026-11-27T11:00:00+01:00", NOW) == datetime(2026, 11, 27, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("10", "neither a duration nor an ISO 8601 time"),
        ("10 m", "neither a duration nor an ISO 8601 time"),
        ("-5m", "neither a duration nor an ISO 8601 time"),
        ("0m", "neither a duration nor an ISO 8601 time"),
        ("1w", "neither a duration nor an ISO 8601 time"),
        ("yesterday", "neither a duration nor an ISO 8601 time"),
        ("367d", "longer than 366 days"),
        ("2026-11-27T12:06:00Z", "in the future"),
        ("1969-12-31T23:59:59Z", "more than 366 days ago"),
        ("0001-01-01T00:00:00", "more than 366 days ago"),
        ("2025-11-26T11:59:59Z", "more than 366 days ago"),
    ],
)
def test_a_since_that_names_no_past_moment_is_refused_with_what_it_takes(text, said):
    with pytest.raises(InvalidRequest) as refused:
        parse_since(text, NOW)
    assert said in refused.value.message and refused.value.field == "since"
    assert "10m" in (refused.value.allowed or "")


def _query(**kwargs: Any) -> LogQuery:
    asked: dict[str, Any] = {"node": None, "since": None, "limit": 100, "next_token": None}
    return LogQuery.of(RID, 2, **(asked | kwargs), now=NOW)


def test_a_first_page_query_holds_the_node_and_the_start_in_milliseconds():
    query = _query(node=1, since="10m")
    assert (query.node, query.limit, query.cloudwatch_token) == (1, 100, None)
    assert query.start_ms == int((NOW - timedelta(minutes=10)).timestamp() * 1000)
    assert _query().start_ms is None


@pytest.mark.parametrize("node", [2, 5])
def test_a_node_the_reservation_does_not_have_is_refused(node):
    with pytest.raises(InvalidRequest) as refused:
        _query(node=node)
    assert refused.value.message == f"node {node}: the reservation has nodes 0 to 1"
    assert refused.value.field == "node"


def test_next_continues_its_own_query_whatever_the_request_repeats():
    first = _query(node=1, since="1h")
    token = first.next_token(RID, "cw-token")
    assert token is not None and first.next_token(RID, None) is None
    later = _query(next_token=token, limit=7)
    assert (later.node, later.start_ms, later.limit) == (1, first.start_ms, 7)
    assert later.cloudwatch_token == "cw-token"
    assert _query(next_token=token, node=1, limit=7) == later


@pytest.mark.parametrize(
    ("kwargs", "said"),
    [
        ({"since": "10m"}, "give `since` on the first page only"),
        ({"node": 0}, "another node's log"),
        ({"reservation": OTHER}, "another reservation's log"),
    ],
)
def test_a_next_asked_with_another_query_is_refused(kwargs, said):
    reservation = kwargs.pop("reservation", RID)
    token = PageToken(reservation, 1, None, "cw").encode()
    with pytest.raises(InvalidRequest) as refused:
        _query(next_token=token, **kwargs)
    assert said in refused.value.message and refused.value.field == "next"


@pytest.mark.parametrize(
    "token",
    [
        "x",
        "!!!!",
        "bm90IGpzb24",
        PageToken(RID, 9, None, "cw").encode(),
        PageToken(RID, None, -1, "cw").encode(),
        "eyJyIjoxfQ",
    ],
)
def test_a_next_this_api_did_not_return_is_refused(token):
    with pytest.raises(InvalidRequest) as refused:
        _query(next_token=token)
    assert refused.value.message == "next is not a token this API returned"


@pytest.fixture
def logs() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("logs", region_name="us-east-2")
        client.create_log_group(logGroupName=GROUP)
        yield client


def _write(logs: Any, reservation: str, pod: str, lines: list[tuple[int, str]]) -> None:
    stream = stream_name(reservation, pod)
    with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
        logs.create_log_stream(logGroupName=GROUP, logStreamName=stream)
    events = [{"timestamp": at, "message": text} for at, text in lines]
    logs.put_log_events(logGroupName=GROUP, logStreamName=stream, logEvents=events)


def _ms(minutes_ago: int) -> int:
    return int((NOW - timedelta(minutes=minutes_ago)).timestamp() * 1000)


def test_a_page_holds_the_reservations_pods_lines_by_time_with_their_node(logs):
    _write(logs, RID, PODS[0], [(_ms(30), "a0"), (_ms(10), "c0\n")])
    _write(logs, RID, PODS[1], [(_ms(20), "b1")])
    _write(logs, OTHER, PODS[0], [(_ms(15), "not yours")])
    page = pod_log_page(PodLogReader(logs, GROUP), RID, PODS, _query())
    assert [(line.node, line.message) for line in page.lines] == [(0, "a0"), (1, "b1"), (0, "c0")]
    assert page.next is None and page.limit == 100
    assert page.lines[0].timestamp == NOW - timedelta(minutes=30)
    one = pod_log_page(PodLogReader(logs, GROUP), RID, PODS, _query(node=1))
    assert [line.message for line in one.lines] == ["b1"]
    recent = pod_log_page(PodLogReader(logs, GROUP), RID, PODS, _query(since="15m"))
    assert [line.message for line in recent.lines] == ["c0"]


def test_pages_follow_each_other_through_next_and_end_with_none(logs):
    _write(logs, RID, PODS[0], [(_ms(50 - n), f"line {n}") for n in range(5)])
    reader, seen, token = PodLogReader(logs, GROUP), [], None
    for _ in range(5):
        page = pod_log_page(reader, RID, PODS, _query(limit=2, next_token=token))
        assert len(page.lines) <= 2
        seen += [line.message for line in page.lines]
        token = page.next
        if token is None:
            break
    assert seen == [f"line {n}" for n in range(5)]


def test_no_stream_or_no_group_is_an_empty_page(logs):
    assert pod_log_page(PodLogReader(logs, GROUP), RID, PODS, _query()).lines == []
    missing = pod_log_page(PodLogReader(logs, "/nope"), RID, PODS, _query())
    assert (missing.lines, missing.next) == ([], None)


def test_lines_are_cut_and_their_control_characters_replaced(logs):
    long_line = "x" * (MESSAGE_CHARACTERS + 10)
    _write(logs, RID, PODS[0], [(_ms(5), long_line), (_ms(4), "a\x1b[31mb\x00")])
    lines = pod_log_page(PodLogReader(logs, GROUP), RID, PODS, _query()).lines
    assert len(lines[0].message) == MESSAGE_CHARACTERS and lines[0].truncated
    assert lines[1].message == "a\ufffd[31mb\ufffd" and not lines[1].truncated
