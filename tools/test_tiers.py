"""`make test`: every tier, in five pytest sessions at once (docs/decisions.md, 2026-11-24
and 2026-11-28).

The lifecycle tier mostly waits on its compressed clock; the other tiers mostly compute. So
the lifecycle tier runs in three sessions of its own (its files split by their measured wall
time), the e2e tier in one (its local cloud waits too), alongside one session for everything
else under tests/. Each session has its
own embedded PostgreSQL (`PYTEST_POSTGRES_DIR`) and its own local cloud (free ports). The
other tiers' output streams to the terminal; each
lifecycle and e2e session's goes to `.local/test-<name>.log`, printed whole once every session has
ended (also when interrupted: a CI job killed at its limit still shows them). The exit
status is the first failing session's (0 if all passed; 130 after Ctrl+C or SIGTERM, once
every session tore down: a SIGTERM is passed on to the sessions as a Ctrl+C). Each session
prints its 15 slowest tests and its slowest files (tests/support/file_durations.py), to
watch the suite's budget; arguments given to this module
(pytest options, not paths) are passed to every session. What the local cloud and the
functions log goes to `.local/test-logs/<name>.log` per session (`GPUDEV_TEST_LOG`,
tests/support/test_logs.py), never to the terminal; a failing session's file is named at the
end.

Ctrl+C works however the runner was started: a shell without job control starts a
background job (`make test &` in a CI script) with SIGINT ignored, and Python then never
raises KeyboardInterrupt, nor do the sessions that inherit it; the runner restores SIGINT's
default at start, for itself and its sessions, because a SIGTERM is passed on as a SIGINT,
which an ignoring session would not act on (docs/decisions.md, 2026-11-27).

With `DATABASE_URL` (a server of your own) the sessions would share it and its template
database, so the tiers run in one session, one after another.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIFECYCLE = "tests/lifecycle"
E2E = "tests/e2e"
# The lifecycle tier's files in three sessions of about equal wall time (per-file times of
# 2026-11-28, docs/testing.md "The suite's budget"); the third runs the rest, so a new
# lifecycle file lands there. The tier mostly waits on its clock (~30% of a core).
LIFECYCLE_SPLIT = {
    "lifecycle-1": (
        "test_fault_campaign.py",
        "test_simulation.py",
        "test_transient_faults.py",
        "test_happy_path.py",
        "test_pod_health.py",
        "test_shared_files.py",
        "test_sweeper.py",
    ),
    "lifecycle-2": (
        "test_notifications.py",
        "test_outages.py",
        "test_cancel_and_faults.py",
        "test_idle_reclaim.py",
    ),
}
REPORT = ["--durations=15", "-p", "tests.support.file_durations"]
# After Ctrl+C: how long the sessions may take to tear down (stop their local clouds and
# PostgreSQL) before they are terminated, and killed KILL_AFTER_SECONDS after that.
TEARDOWN_SECONDS = 60.0
KILL_AFTER_SECONDS = 10.0


@dataclass(frozen=True)
class Session:
    name: str
    args: tuple[str, ...]
    logged: bool = True  # output to .local/test-<name>.log, else to the terminal

    @property
    def log(self) -> Path:
        return ROOT / ".local" / f"test-{self.name}.log"

    @property
    def records(self) -> str:
        """Where the session's local cloud and functions log, relative to the repository."""
        return f".local/test-logs/{self.name}.log"

    def environment(self) -> dict[str, str]:
        return {
            **os.environ,
            "PYTEST_POSTGRES_DIR": f".local/pytest-postgres-{self.name}",
            "GPUDEV_TEST_LOG": self.records,
        }

    def start(self, extra: list[str]) -> subprocess.Popen[bytes]:
        output = self.log.open("wb") if self.logged else None
        try:
            return subprocess.Popen(
                [sys.executable, "-m", "pytest", *REPORT, *extra, *self.args],
                cwd=ROOT,
                env=self.environment(),
                stdout=output,
                stderr=subprocess.STDOUT if output else None,
            )
        finally:
            if output:
                output.close()  # the child holds its own copy


def _lifecycle_files(name: str) -> tuple[str, ...]:
    return tuple(f"{LIFECYCLE}/{file}" for file in LIFECYCLE_SPLIT[name])


_SPLIT_OFF = tuple(path for name in LIFECYCLE_SPLIT for path in _lifecycle_files(name))
SESSIONS = [
    *(Session(name, _lifecycle_files(name)) for name in LIFECYCLE_SPLIT),
    Session("lifecycle-3", (LIFECYCLE, *(f"--ignore={path}" for path in _SPLIT_OFF))),
    # e2e (one local cloud, ~55% of a core) beside the CPU-bound unit/integration tiers.
    Session("e2e", (E2E,)),
    Session("tiers", (f"--ignore={LIFECYCLE}", f"--ignore={E2E}"), logged=False),
]


def main(extra: list[str]) -> int:
    # Inherited as ignored (a background job), SIGINT is made Python's default again: the
    # sessions then start with it at SIG_DFL and pytest tears down on it (see the module).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if os.environ.get("DATABASE_URL"):
        return subprocess.call([sys.executable, "-m", "pytest", *REPORT, *extra], cwd=ROOT)
    (ROOT / ".local").mkdir(exist_ok=True)
    started = time.monotonic()
    logs = ", ".join(str(s.log.relative_to(ROOT)) for s in SESSIONS if s.logged)
    print(
        f"Running {LIFECYCLE} in three sessions and {E2E} in one, alongside the other tiers;"
        f" output: {logs}",
        flush=True,
    )
    running: dict[Session, subprocess.Popen[bytes]] = {}
    statuses: dict[str, int] = {}
    interrupted = terminated = False

    def on_sigterm(_signum: int, _frame: object) -> None:
        nonlocal terminated
        terminated = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        for session in SESSIONS:
            running[session] = session.start(extra)
        while len(statuses) < len(running):  # each as it ends
            for session, process in running.items():
                if session.name not in statuses and (status := process.poll()) is not None:
                    statuses[session.name] = status
                    print(f"\n== {session.name}: exit {status} after {_since(started)}", flush=True)
            time.sleep(0.5)
    except KeyboardInterrupt:
        interrupted = True
        print("\n== interrupted: letting each session tear down its clouds", flush=True)
        if terminated:  # a terminal's Ctrl+C reached the sessions already; a SIGTERM did not
            for process in running.values():
                if process.poll() is None:
                    process.send_signal(signal.SIGINT)
    finally:  # leave no session behind, and show what each logged
        _end(list(running.values()), TEARDOWN_SECONDS if interrupted else 0.0)
        for session in running:  # (a session interrupted before it started has no log)
            if session.logged:
                print(f"\n== {session.name} ({' '.join(session.args)}):", flush=True)
                sys.stdout.buffer.write(session.log.read_bytes())
                sys.stdout.flush()
    if interrupted:
        return 130  # as a shell reports Ctrl+C
    failed = [name for name, status in statuses.items() if status]
    summary = ", ".join(f"{name}: exit {status}" for name, status in statuses.items())
    print(f"\n== all tiers {'FAILED' if failed else 'passed'} in {_since(started)} ({summary})")
    for session in running:
        if session.name in failed:
            where = session.records
            print(f"== {session.name}: the local cloud's and the functions' logs: {where}")
    return statuses[failed[0]] if failed else 0


def _end(processes: list[subprocess.Popen[bytes]], grace: float) -> None:
    """Sessions still running get `grace` seconds to end by themselves (Ctrl+C reached them
    from the terminal: pytest tears down its local clouds and PostgreSQL; a SIGTERM now
    would cut that short), then SIGTERM, then SIGKILL; all reaped. A second Ctrl+C skips
    the wait."""
    deadline = time.monotonic() + grace
    try:
        for process in processes:
            process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        pass
    for process in processes:
        if process.poll() is None:
            process.terminate()
    for process in processes:
        try:
            process.wait(timeout=KILL_AFTER_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _since(started: float) -> str:
    seconds = round(time.monotonic() - started)
    return f"{seconds // 60} min {seconds % 60:02d} s"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
