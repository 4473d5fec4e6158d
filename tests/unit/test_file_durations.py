"""`make test`'s per-file report (tests/support/file_durations.py): the wall time of each
file's tests, setup and teardown included, slowest first."""

from __future__ import annotations

from types import SimpleNamespace

from tests.support.file_durations import SHOWN, FileDurations


class Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, _sep: str, title: str) -> None:
        self.lines.append(f"== {title}")

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def _report(nodeid: str, when: str, duration: float) -> SimpleNamespace:
    return SimpleNamespace(nodeid=nodeid, when=when, duration=duration)


def test_each_files_setup_call_and_teardown_add_up_slowest_first():
    durations = FileDurations()
    for nodeid, when, seconds in [
        ("tests/lifecycle/test_a.py::test_one", "setup", 10.0),
        ("tests/lifecycle/test_a.py::test_one", "call", 2.0),
        ("tests/lifecycle/test_a.py::test_one", "teardown", 0.5),
        ("tests/lifecycle/test_b.py::test_two[x]", "call", 20.0),
        ("tests/lifecycle/test_b.py::test_two[y]", "call", 1.0),
    ]:
        durations.pytest_runtest_logreport(_report(nodeid, when, seconds))  # type: ignore[arg-type]
    out = Lines()

    durations.pytest_terminal_summary(out)

    assert out.lines == [
        "== slowest 2 files",
        "    21.0s    2 tests  tests/lifecycle/test_b.py",
        "    12.5s    1 tests  tests/lifecycle/test_a.py",
        "    33.5s in all",
    ]


def test_a_session_that_ran_nothing_reports_nothing_and_many_files_are_cut():
    out = Lines()
    FileDurations().pytest_terminal_summary(out)
    assert out.lines == []

    durations = FileDurations()
    for i in range(SHOWN + 5):
        durations.pytest_runtest_logreport(_report(f"t/test_{i}.py::t", "call", i))  # type: ignore[arg-type]
    durations.pytest_terminal_summary(out)
    assert len(out.lines) == SHOWN + 2 and out.lines[1].endswith(f"t/test_{SHOWN + 4}.py")
