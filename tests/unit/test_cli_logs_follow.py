"""`gpu-dev logs --follow` on a reservation of several nodes: each node's Fluent Bit sends on
its own, so a line stamped before the newest one printed can reach CloudWatch later. The
follower reads again from a window before the newest line and prints each line once. Against
a fake API client that answers as the logs route does (lines from `since`, oldest first)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from click.testing import CliRunner

from gpudev_cli import context
from gpudev_cli.client import Reply, TryAgainLater
from gpudev_cli.commands import logs as logs_command
from gpudev_cli.main import cli

RID = "5f0c1a2b-0000-4000-8000-000000000000"
T0 = datetime(2026, 11, 27, 12, tzinfo=UTC)


def _line(event_id: str, node: int, seconds: float, message: str) -> dict[str, Any]:
    at = T0 + timedelta(seconds=seconds)
    return {"id": event_id, "node": node, "message": message, "timestamp": at.isoformat()}


class LateNodeApi:
    """The reservation's log as CloudWatch holds it: `arrivals[i]` are the lines that have
    arrived by the i-th status read (the follower reads the status once per round)."""

    def __init__(self, arrivals: list[list[dict[str, Any]]], rounds_until_ended: int) -> None:
        self.arrivals, self.round = arrivals, 0
        self.rounds_until_ended = rounds_until_ended
        self.sinces: list[str | None] = []
        self.throttled_reads: set[int] = set()  # the log reads (by number) that are throttled

    def call(self, method: str, path: str, body: Any = None) -> Reply:
        return Reply(200, {}, self._reservation())

    def request(self, method: str, path: str, body: Any = None) -> Any:
        url = urlparse(path)
        if url.path.endswith("/logs"):
            since = parse_qs(url.query).get("since", [None])[0]
            self.sinces.append(since)
            if len(self.sinces) in self.throttled_reads:
                raise TryAgainLater("CloudWatch Logs is busy; try again (HTTP 503)")
            arrived = [line for batch in self.arrivals[: self.round + 1] for line in batch]
            start = datetime.fromisoformat(since) if since else None
            lines = [
                line
                for line in sorted(arrived, key=lambda line: (line["timestamp"], line["id"]))
                if start is None or datetime.fromisoformat(line["timestamp"]) >= start
            ]
            return {"lines": lines, "limit": 500, "next": None}
        self.round += 1
        return self._reservation()

    def _reservation(self) -> dict[str, Any]:
        ended = self.round >= self.rounds_until_ended
        return {"reservation_id": RID, "total_nodes": 2, "status": "expired" if ended else "active"}


@pytest.fixture
def follow(monkeypatch: pytest.MonkeyPatch) -> Any:
    waits: list[float] = []
    monkeypatch.setattr(logs_command, "time", SimpleNamespace(sleep=waits.append))

    def run(api: LateNodeApi) -> list[str]:
        run.waits = waits  # type: ignore[attr-defined]
        monkeypatch.setattr(context.Context, "client", lambda self: api)
        result = CliRunner().invoke(cli, ["logs", RID, "--follow"])
        assert result.exit_code == 0, result.output
        return [line for line in result.stdout.splitlines() if line.startswith("[node")]

    return run


def test_a_line_of_another_node_stamped_earlier_but_arriving_later_is_printed(follow):
    api = LateNodeApi(
        [
            [_line("a", 0, 10, "node 0 first")],
            [_line("b", 1, 8, "node 1, stamped earlier, sent later")],
            [],
        ],
        rounds_until_ended=2,
    )
    printed = follow(api)
    assert printed == ["[node 0] node 0 first", "[node 1] node 1, stamped earlier, sent later"]
    # it read again from 30 s before the newest line printed, not from that line
    assert api.sinces[1] == (T0 + timedelta(seconds=10 - 30)).isoformat()


def test_each_line_of_the_window_read_again_is_printed_once(follow):
    api = LateNodeApi(
        [
            [_line("a", 0, 1, "one"), _line("b", 1, 2, "two"), _line("c", 0, 2, "three")],
            [_line("d", 1, 2, "four, the same moment as two")],
            [_line("e", 0, 40, "five, 38 s later")],
            [_line("f", 1, 39, "six, a second before five")],
            [],
        ],
        rounds_until_ended=4,
    )
    printed = follow(api)
    assert [line.split("] ", 1)[1] for line in printed] == [
        "one",
        "two",
        "three",
        "four, the same moment as two",
        "five, 38 s later",
        "six, a second before five",
    ]


def test_a_throttled_read_while_following_waits_longest_and_asks_again(follow):
    api = LateNodeApi(
        [[_line("a", 0, 1, "one")], [_line("b", 1, 2, "two")], []],
        rounds_until_ended=1,
    )
    api.throttled_reads = {2}  # the first read after the initial one
    printed = follow(api)
    assert [line.split("] ", 1)[1] for line in printed] == ["one", "two"]
    assert logs_command.LONGEST_WAIT_SECONDS in follow.waits
