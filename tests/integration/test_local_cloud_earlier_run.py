"""`python -m localcloud` with DATABASE_URL refuses a database holding reservations or
disks of an earlier run: the new cloud's AWS (moto) and cluster start empty, so those rows
would point at volumes, snapshots and pods that do not exist (localcloud/earlier_run.py). The
embedded PostgreSQL starts clean instead (tests/e2e/test_local_cloud_restart.py)."""

from __future__ import annotations

import signal
from pathlib import Path

import psycopg
import pytest

from localcloud.__main__ import main
from localcloud.earlier_run import EarlierRun, refuse_earlier_run


def test_an_empty_or_never_migrated_database_is_accepted(fresh_database: str, empty_database: str):
    refuse_earlier_run(fresh_database)
    refuse_earlier_run(empty_database)


def test_a_database_with_a_disk_of_an_earlier_run_is_refused_naming_why(fresh_database: str):
    with psycopg.connect(fresh_database) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn)"
            " VALUES ('alice', 'arn:aws:iam::123456789012:user/alice')"
        )
        conn.execute("INSERT INTO disks (user_id, disk_name) VALUES ('alice', 'work')")

    with pytest.raises(EarlierRun, match=r"0 reservation\(s\) and 1 disk\(s\) of an earlier run"):
        refuse_earlier_run(fresh_database)


def test_the_local_cloud_refuses_it_before_starting_anything(
    fresh_database: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
):
    with psycopg.connect(fresh_database) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn)"
            " VALUES ('alice', 'arn:aws:iam::123456789012:user/alice')"
        )
        conn.execute("INSERT INTO disks (user_id, disk_name) VALUES ('alice', 'work')")
    monkeypatch.setenv("DATABASE_URL", fresh_database)

    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = main([f"--state-dir={tmp_path}"])
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)

    assert code == 1
    assert "of an earlier run" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [], "nothing started, nothing written"
