"""As root, a checkout PostgreSQL's user cannot reach (a clone in a 0700 directory) still
starts the embedded server: its files are staged under the temporary directory, and stopping
it, or the next start after a killed run, leaves nothing behind."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from localcloud import postgres_staging
from localcloud.postgres import (
    EmbeddedPostgres,
    PostgresError,
    default_bindir,
    stop_stale_server,
)
from tests.support.child_processes import running

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="uses the embedded server"),
    pytest.mark.skipif(
        os.geteuid() != 0,
        reason="staging happens only as root (PostgreSQL then runs as an unprivileged user); "
        "run as root to test it",
    ),
]


def _wait_until_gone(pid: int) -> None:
    deadline = time.monotonic() + 20
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(pid)


@pytest.fixture
def private_checkout() -> Iterator[Path]:
    """A 0700 directory holding what the server needs from a clone: the wheel's `bin`
    (linked, as a clone's .venv would hold it) and room for `.local`."""
    path = Path(tempfile.mkdtemp(prefix="gpudev-private-"))
    path.chmod(0o700)
    (path / "pginstall").mkdir()
    (path / "pginstall" / "bin").symlink_to(default_bindir().resolve())
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _server(checkout: Path, name: str = "postgres") -> EmbeddedPostgres:
    return EmbeddedPostgres(
        checkout / ".local" / name / "data", bindir=checkout / "pginstall" / "bin"
    )


def test_a_server_in_a_private_checkout_runs_from_staged_files_and_stop_leaves_nothing(
    private_checkout: Path,
):
    server = _server(private_checkout).start()
    pid = server.pid
    assert pid is not None
    run_dir = server.server_data_dir.parent
    try:
        assert server.staged
        assert server.server_bindir == postgres_staging.staged_install(default_bindir()).resolve()
        # The run directory is the server user's alone; the asked-for path points at it.
        owner = pwd.getpwuid(run_dir.stat().st_uid).pw_name
        assert owner == server.run_as.name if server.run_as else False
        assert run_dir.stat().st_mode & 0o777 == 0o700
        assert server.data_dir.is_symlink() and server.data_dir.resolve() == server.server_data_dir
        with psycopg.connect(server.url) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("gpudev",)
    finally:
        server.stop()
    assert not running(pid)
    assert not run_dir.exists()
    assert not run_dir.with_name(run_dir.name + ".lock").exists()
    assert sorted(p.name for p in (private_checkout / ".local" / "postgres").iterdir()) == [
        "postgres.log"
    ]


def test_a_killed_staged_run_is_cleaned_up_by_the_next_staged_start(private_checkout: Path):
    data_dir = private_checkout / ".local" / "killed" / "data"
    script = (
        "import time; from pathlib import Path; "
        "from localcloud.postgres import EmbeddedPostgres; "
        f"s = EmbeddedPostgres(Path({str(data_dir)!r}), "
        f"bindir=Path({str(private_checkout / 'pginstall' / 'bin')!r})).start(); "
        "print(s.pid, s.server_data_dir.parent, flush=True); time.sleep(60)"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, cwd=ROOT)
    assert child.stdout is not None
    pid_text, run_dir_text = child.stdout.readline().split()
    child.kill()
    child.wait()
    _wait_until_gone(int(pid_text))
    left = Path(run_dir_text.decode())
    assert left.exists(), "the killed run left its staged files"

    # Any staged start sweeps runs whose lock is free, not only its own data directory's.
    with _server(private_checkout, "other") as other:
        assert other.staged
        assert not left.exists()
        assert not left.with_name(left.name + ".lock").exists()
    # The killed run's symlink dangles; it is no server's, and a start there replaces it.
    assert data_dir.is_symlink() and not stop_stale_server(data_dir)
    again = EmbeddedPostgres(data_dir, bindir=private_checkout / "pginstall" / "bin")
    with again, psycopg.connect(again.url) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert not data_dir.is_symlink()


def test_a_data_directory_a_live_run_uses_is_refused(private_checkout: Path):
    server = _server(private_checkout).start()
    try:
        assert server.run_as is not None
        with pytest.raises(postgres_staging.StagingError, match="another live run uses"):
            postgres_staging.claim_run_dir(
                server.data_dir, server.run_as.uid, server.run_as.gid, stop_stale_server, wait=0
            )
        with psycopg.connect(server.url) as conn:  # and the live run is untouched
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()


def test_a_reachable_checkout_is_not_staged():
    # A world-readable directory and an install the server user can read: the fast path.
    reachable = Path(tempfile.mkdtemp(prefix="gpudev-reachable-"))
    try:
        reachable.chmod(0o755)
        bindir = postgres_staging.staged_install(default_bindir())
        with EmbeddedPostgres(reachable / "data", bindir=bindir) as server:
            assert not server.staged
            assert server.server_data_dir == server.data_dir == (reachable / "data").resolve()
    finally:
        shutil.rmtree(reachable, ignore_errors=True)


@pytest.mark.parametrize("mode", [0o777, 0o755], ids=["writable-by-anyone", "roots-but-incomplete"])
def test_a_staged_install_that_is_untrusted_or_incomplete_is_made_anew(tmp_path: Path, mode: int):
    root = tmp_path / "tmp"
    root.mkdir()
    planted = postgres_staging.install_dir_for(default_bindir(), root)
    (planted / "bin").mkdir(parents=True)
    (planted / "bin" / "postgres").write_text("#!/bin/sh\necho not postgres\n")
    planted.chmod(mode)  # 0777: anyone could have put it there; 0755: an older layout

    bindir = postgres_staging.staged_install(default_bindir(), root)

    assert bindir.is_relative_to(planted) and not (planted / "bin").exists()
    assert planted.stat().st_uid == 0 and planted.stat().st_mode & 0o777 == 0o755
    original = default_bindir() / "postgres"
    assert (bindir / "postgres").read_bytes() == original.read_bytes()
    assert sorted(p.name for p in bindir.parent.iterdir()) == ["bin", "lib", "share"]
    # It runs: its shared libraries were copied where its RPATH looks.
    version = subprocess.run([bindir / "postgres", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and "PostgreSQL" in version.stdout
    assert [p.name for p in root.iterdir()] == [planted.name]  # no half-built copy left


def test_handing_files_to_the_server_user_never_follows_a_symbolic_link(tmp_path: Path):
    """A staged run directory belongs to the server's user: a link it plants (to a file of
    root's, or as the `socket` directory itself) must not make root chown the target."""
    server = EmbeddedPostgres(tmp_path / "data")
    assert server.run_as is not None
    outside = tmp_path / "roots"
    outside.mkdir(mode=0o700)
    (outside / "secret").write_text("root's\n")
    tree = tmp_path / "socket"
    (tree / "deeper").mkdir(parents=True)
    (tree / "deeper" / "link").symlink_to(outside / "secret")
    (tree / "dirlink").symlink_to(outside)

    server._chown_tree(tree)

    assert (tree / "deeper").stat().st_uid == server.run_as.uid
    assert (tree / "deeper" / "link").lstat().st_uid == server.run_as.uid
    assert outside.stat().st_uid == 0
    assert (outside / "secret").stat().st_uid == 0
    planted = tmp_path / "planted-socket"
    planted.symlink_to(outside)
    with pytest.raises(PostgresError, match="symbolic link"):
        server._chown_tree(planted)
    assert outside.stat().st_uid == 0
