"""A pytest plugin that `make test` loads in each session (`-p tests.support.file_durations`
in tools/test_tiers.py): at the end, the slowest test files and the wall time their tests
took (setup, call and teardown summed; a package fixture's setup counts to the file whose
first test made it). The lifecycle sessions are split by file: this is what a new split is
made from (docs/testing.md, "The suite's budget")."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

SHOWN = 40  # files: every lifecycle file of a session, the slowest of the other tiers


class FileDurations:
    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.tests: defaultdict[str, int] = defaultdict(int)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::", 1)[0]
        self.seconds[path] += report.duration
        if report.when == "call":
            self.tests[path] += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.seconds:
            return
        slowest = sorted(self.seconds.items(), key=lambda item: -item[1])[:SHOWN]
        terminalreporter.write_sep("=", f"slowest {len(slowest)} files")
        for path, seconds in slowest:
            terminalreporter.write_line(f"{seconds:8.1f}s {self.tests[path]:4d} tests  {path}")
        total = sum(self.seconds.values())
        terminalreporter.write_line(f"{total:8.1f}s in all")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(FileDurations(), "file-durations")
