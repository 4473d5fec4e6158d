"""The embedded server starts, stops cleanly, and never outlives a killed run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from localcloud.postgres import EmbeddedPostgres, PostgresError, stop_stale_server
from tests.support.child_processes import running

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")), reason="uses the embedded server only"
)


def _data_dir(name: str) -> Path:
    # Under the project (like make run's), so the unprivileged server user can reach it.
    path = ROOT / ".local" / "pytest-launcher" / name / "data"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_start_serves_queries_and_stop_leaves_no_process():
    server = EmbeddedPostgres(_data_dir("clean")).start()
    pid = server.pid
    assert pid is not None
    with psycopg.connect(server.url) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == ("gpudev",)
    server.stop()
    assert not running(pid)


def test_a_server_left_by_a_killed_run_is_cleaned_up_by_the_next_one():
    data_dir = _data_dir("stale")
    # A run that starts a server and is then SIGKILLed, with no chance to clean up.
    script = (
        "import sys, time; from pathlib import Path; "
        "from localcloud.postgres import EmbeddedPostgres; "
        f"s = EmbeddedPostgres(Path({str(data_dir)!r})).start(); "
        "print(s.pid, flush=True); time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, cwd=ROOT)
    assert child.stdout is not None
    pid = int(child.stdout.readline())
    child.kill()
    child.wait()
    # The server dies with its parent (PR_SET_PDEATHSIG) ...
    deadline = time.monotonic() + 10
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(pid)
    # ... and its leftover pid file does not stop the next run.
    server = EmbeddedPostgres(data_dir).start()
    try:
        with psycopg.connect(server.url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()


def test_a_live_stale_server_is_shut_down_before_a_new_start():
    data_dir = _data_dir("live-stale")
    orphan = EmbeddedPostgres(data_dir).start()
    pid = orphan.pid
    assert pid is not None
    # Forget it without stopping, as a crashed run would.
    orphan._process = None
    try:
        assert stop_stale_server(data_dir) is True
        assert not running(pid)
        assert stop_stale_server(data_dir) is False
    finally:
        orphan.stop()  # as root from a private directory: its staged files, left otherwise


def test_a_port_in_use_is_a_clear_error():
    with EmbeddedPostgres(_data_dir("first")) as first:
        second = EmbeddedPostgres(_data_dir("second"), port=first.port)
        with pytest.raises(PostgresError, match=f"port {first.port} .* in use"):
            second.start(timeout=10)


def test_a_pid_file_naming_a_server_of_another_data_directory_stops_nothing(tmp_path: Path):
    """As root, a staged run directory is the server user's: a `postmaster.pid` planted there
    (naming any PostgreSQL on the machine) must not have root stop that server."""
    elsewhere = tmp_path / "another-servers-data"
    elsewhere.mkdir()
    # A process that looks like a postmaster (argv[0] ends in postgres) running in its own
    # data directory, as a postmaster does.
    other = subprocess.Popen(
        [str(tmp_path / "postgres"), "60"], executable="/bin/sleep", cwd=elsewhere
    )
    try:
        planted = tmp_path / "run" / "data"
        planted.mkdir(parents=True)
        (planted / "postmaster.pid").write_text(f"{other.pid}\n{elsewhere}\n")
        assert stop_stale_server(planted) is False
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
