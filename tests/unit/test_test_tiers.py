"""`make test` (tools/test_tiers.py) after Ctrl+C: the sessions got the SIGINT from the
terminal and tear down their clouds; the runner waits for that instead of cutting it short
with SIGTERM, and exits 130. Real processes: a driver running `main` over sessions that are
small Python programs (pytest sessions would take minutes). Each case sets the SIGINT
disposition the runner starts with (a terminal's default, or ignored as a shell without job
control starts `make test &`), so the outcome does not depend on how pytest was started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tools import test_tiers

ROOT = Path(__file__).resolve().parents[2]

# A session that, on KeyboardInterrupt, takes a second to tear down, then says so and exits 2.
# Like pytest, it relies on Python's own SIGINT handler, which Python installs only if SIGINT
# was not ignored when it started.
SESSION = """
import pathlib, sys, time
mark = pathlib.Path(sys.argv[1])
mark.with_suffix(".ready").write_text("ready")
try:
    while True:
        time.sleep(0.1)
except KeyboardInterrupt:
    time.sleep(1.0)
    mark.with_suffix(".torn-down").write_text("done")
    sys.exit(2)
"""

DRIVER = """
import subprocess, sys
from dataclasses import dataclass
from tools import test_tiers

@dataclass(frozen=True)
class Fake(test_tiers.Session):
    def start(self, extra):
        return subprocess.Popen([sys.executable, "-c", SESSION, f"{DIR}/{self.name}"])

test_tiers.SESSIONS = [Fake("a", (), logged=False), Fake("b", (), logged=False)]
sys.exit(test_tiers.main([]))
"""


def _ctrl_c(runner: subprocess.Popen[bytes]) -> None:
    os.killpg(runner.pid, signal.SIGINT)  # a terminal's Ctrl+C: the whole foreground group


def _sigterm(runner: subprocess.Popen[bytes]) -> None:
    os.kill(runner.pid, signal.SIGTERM)  # a CI job's time limit: the runner alone


def _started_with(disposition: signal.Handlers) -> Callable[[], None]:
    def set_sigint() -> None:  # in the runner's process, before it execs
        signal.signal(signal.SIGINT, disposition)

    return set_sigint


@pytest.mark.parametrize(
    "sigint", [signal.SIG_DFL, signal.SIG_IGN], ids=["in-foreground", "sigint-ignored"]
)
@pytest.mark.parametrize("interrupt", [_ctrl_c, _sigterm], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_lets_every_session_tear_down_then_exits_130(
    tmp_path: Path,
    interrupt: Callable[[subprocess.Popen[bytes]], None],
    sigint: signal.Handlers,
):
    driver = f"SESSION = {SESSION!r}\nDIR = {str(tmp_path)!r}\n" + DRIVER
    runner = subprocess.Popen(
        [sys.executable, "-c", driver],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
        preexec_fn=_started_with(sigint),
        start_new_session=True,  # its own process group, as a terminal's foreground job
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not all((tmp_path / f"{name}.ready").exists() for name in "ab"):
            assert runner.poll() is None, runner.communicate()[0].decode()
            assert time.monotonic() < deadline, "the sessions did not start"
            time.sleep(0.05)
        interrupt(runner)
        output = runner.communicate(timeout=60)[0].decode()
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
    assert runner.returncode == 130, output
    assert sorted(p.name for p in tmp_path.glob("*.torn-down")) == ["a.torn-down", "b.torn-down"]
    assert "Traceback" not in output


def test_each_session_logs_to_a_file_of_its_own():
    files = [session.environment()["GPUDEV_TEST_LOG"] for session in test_tiers.SESSIONS]
    assert files == [f".local/test-logs/{session.name}.log" for session in test_tiers.SESSIONS]


FAILING_DRIVER = """
import subprocess, sys
from dataclasses import dataclass
from tools import test_tiers

@dataclass(frozen=True)
class Fake(test_tiers.Session):
    def start(self, extra):
        status = 1 if self.name == "broken" else 0
        return subprocess.Popen([sys.executable, "-c", f"raise SystemExit({status})"])

test_tiers.SESSIONS = [Fake("broken", (), logged=False), Fake("fine", (), logged=False)]
sys.exit(test_tiers.main([]))
"""


def test_a_failing_session_names_its_log_file_and_a_passing_one_does_not():
    result = subprocess.run(
        [sys.executable, "-c", FAILING_DRIVER],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "DATABASE_URL"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "broken: the local cloud's and the functions' logs: .local/test-logs/broken.log" in (
        result.stdout
    )
    assert "test-logs/fine.log" not in result.stdout


def test_every_lifecycle_file_runs_in_exactly_one_session_and_e2e_in_its_own():
    lifecycle = ROOT / test_tiers.LIFECYCLE
    files = {p.name for p in lifecycle.glob("test_*.py")}
    named = [name for names in test_tiers.LIFECYCLE_SPLIT.values() for name in names]
    assert len(named) == len(set(named)), "a file named in two sessions"
    assert set(named) <= files, "a named file that does not exist would fail its session"
    sessions = {s.name: s.args for s in test_tiers.SESSIONS}
    rest = sessions["lifecycle-3"]
    assert rest[0] == test_tiers.LIFECYCLE
    assert {a.removeprefix(f"--ignore={test_tiers.LIFECYCLE}/") for a in rest[1:]} == set(named)
    assert sessions["e2e"] == (test_tiers.E2E,)
    assert set(sessions["tiers"]) == {
        f"--ignore={test_tiers.LIFECYCLE}",
        f"--ignore={test_tiers.E2E}",
    }
