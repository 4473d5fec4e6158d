"""Every pooled connection carries its statement and lock timeouts, waiting for one is
bounded, and each limit reaches the API as a clear 503 (never a 500 or a gateway timeout).

The API cases run the real handler in process on the `events/api/get_me.json` event, with
a pool of one connection and short limits."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import psycopg
import pytest

from gpudev.db.constraints import transient_errors
from gpudev.db.pool import close_pool, connection, connection_pool, open_pool
from gpudev.errors import DatabaseBusy, DatabaseUnavailable, Unavailable
from gpudev.settings import DatabaseSettings, reset_settings_cache

ROOT = Path(__file__).resolve().parents[2]


def _settings(url: str, **limits: Any) -> DatabaseSettings:
    return DatabaseSettings(database_url=url, db_pool_max_size=1, **limits)


def test_a_statement_past_its_statement_timeout_is_cancelled_and_becomes_database_busy(
    database_url: str,
):
    settings = _settings(database_url, db_statement_timeout_ms=200)
    pool = open_pool(settings)
    try:
        with pool.connection() as conn:
            assert conn.execute("SHOW statement_timeout").fetchone() == ("200ms",)
            assert conn.execute("SHOW lock_timeout").fetchone() == ("3s",)
            with pytest.raises(psycopg.errors.QueryCanceled):
                conn.execute("SELECT pg_sleep(2)")
            conn.rollback()
            busy = pytest.raises(DatabaseBusy, match=r"longer than 0\.2 s \(statement_timeout\)")
            with busy, transient_errors(200, 3000, 5):
                conn.execute("SELECT pg_sleep(2)")
    finally:
        pool.close()


def test_waiting_past_lock_timeout_becomes_database_busy(fresh_database: str):
    pool = open_pool(_settings(fresh_database, db_lock_timeout_ms=200))
    try:
        with psycopg.connect(fresh_database) as holder:
            holder.execute("LOCK TABLE users IN ACCESS EXCLUSIVE MODE")
            busy = pytest.raises(DatabaseBusy, match=r"longer than 0\.2 s for a lock")
            with pool.connection() as conn, busy, transient_errors(10_000, 200, 5):
                conn.execute("SELECT count(*) FROM users")
    finally:
        pool.close()


def test_waiting_for_a_pooled_connection_is_bounded_and_becomes_database_unavailable(
    database_url: str,
):
    pool = open_pool(_settings(database_url, db_pool_timeout_seconds=0.2))
    try:
        unavailable = pytest.raises(DatabaseUnavailable, match=r"no connection within 0\.2 s")
        with pool.connection(), unavailable, transient_errors(10_000, 3_000, 0.2):
            pool.getconn()  # the only connection is taken: waits 0.2 s, then gives up
    finally:
        pool.close()


# -- through the API ---------------------------------------------------------------------


def _set_environment(monkeypatch: pytest.MonkeyPatch, environment: dict[str, str]) -> None:
    """Set the variables; the next request opens a new pool with settings read again."""
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    close_pool()
    reset_settings_cache()


@pytest.fixture
def api(fresh_database: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The API handler module on a pool of one connection with short limits."""
    environment = {
        "DATABASE_URL": fresh_database,
        "DB_POOL_MAX_SIZE": "1",
        "DB_POOL_TIMEOUT_SECONDS": "0.3",
        "DB_STATEMENT_TIMEOUT_MS": "300",
        "DB_LOCK_TIMEOUT_MS": "200",
        "JOBS_QUEUE_URL": "http://localhost/queue/gpudev-jobs",
        "DEPLOYMENT_ACCOUNT_ID": "123456789012",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
    }
    _set_environment(monkeypatch, environment)
    monkeypatch.syspath_prepend(str(ROOT / "functions" / "api"))  # Lambda's task root
    spec = importlib.util.spec_from_file_location(
        "gpudev_api_handler_under_test", ROOT / "functions" / "api" / "handler.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    close_pool()
    reset_settings_cache()


def _call_me(api: ModuleType) -> tuple[int, dict[str, Any]]:
    event = json.loads((ROOT / "events" / "api" / "get_me.json").read_text())
    context = SimpleNamespace(
        function_name="gpudev-api",
        memory_limit_in_mb=1024,
        invoked_function_arn="arn:aws:lambda:us-east-2:123456789012:function:gpudev-api",
        aws_request_id="test-request",
    )
    response = api.handler(event, context)
    return response["statusCode"], json.loads(response["body"])


def _call_me_while_users_is_locked(
    api: ModuleType, database_url: str
) -> tuple[int, dict[str, Any]]:
    with psycopg.connect(database_url) as holder:
        holder.execute("LOCK TABLE users IN ACCESS EXCLUSIVE MODE")
        return _call_me(api)


def test_the_api_answers_as_usual_within_the_limits(
    api: ModuleType, monkeypatch: pytest.MonkeyPatch
):
    # Limits set on every connection, as deployed, but wide enough for a machine under load:
    # the first request opens the pool, which took over 0.3 s at load average 17.
    _set_environment(
        monkeypatch,
        {
            "DB_POOL_TIMEOUT_SECONDS": "10",
            "DB_STATEMENT_TIMEOUT_MS": "10000",
            "DB_LOCK_TIMEOUT_MS": "5000",
        },
    )
    status, body = _call_me(api)
    assert status == 200 and body["username"] == "alice"


def test_a_lock_held_past_lock_timeout_is_a_503_that_says_so(api: ModuleType, fresh_database: str):
    status, body = _call_me_while_users_is_locked(api, fresh_database)
    assert status == 503
    assert "lock_timeout" in body["message"]


def test_a_statement_past_statement_timeout_is_a_503_that_says_so(
    api: ModuleType, fresh_database: str, monkeypatch: pytest.MonkeyPatch
):
    # No lock timeout: the wait now runs into the statement timeout instead.
    _set_environment(monkeypatch, {"DB_LOCK_TIMEOUT_MS": "0"})
    status, body = _call_me_while_users_is_locked(api, fresh_database)
    assert status == 503
    assert "statement_timeout" in body["message"]


def test_a_connection_killed_mid_request_is_a_503_not_a_500(
    api: ModuleType, fresh_database: str, monkeypatch: pytest.MonkeyPatch
):
    """Aurora restarting or failing over: the request's backend goes away while it runs."""
    _set_environment(monkeypatch, {"DB_LOCK_TIMEOUT_MS": "0", "DB_STATEMENT_TIMEOUT_MS": "0"})
    with psycopg.connect(fresh_database, autocommit=True) as holder:
        holder.execute("BEGIN")
        holder.execute("LOCK TABLE users IN ACCESS EXCLUSIVE MODE")

        def kill_the_waiting_request() -> None:
            with psycopg.connect(fresh_database, autocommit=True) as killer:
                for _ in range(100):
                    killed = killer.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
                    ).fetchall()
                    if killed:
                        return
                    time.sleep(0.05)

        killer = threading.Thread(target=kill_the_waiting_request)
        killer.start()
        status, body = _call_me(api)
        killer.join(10)
        holder.execute("ROLLBACK")
    assert status == 503
    assert "the database did not answer" in body["message"]


def test_a_starved_pool_is_a_503_within_the_pool_timeout(api: ModuleType):
    release = threading.Event()
    taken = threading.Event()

    def hold_the_only_connection() -> None:
        with connection():
            taken.set()
            release.wait(5)

    holder = threading.Thread(target=hold_the_only_connection)
    holder.start()
    try:
        assert taken.wait(5)
        status, body = _call_me(api)
    finally:
        release.set()
        holder.join(5)
    assert status == 503
    assert "no connection within 0.3 s" in body["message"]
    assert connection_pool().get_stats()["requests_errors"] >= 1


def test_the_limits_are_unavailable_errors_which_the_api_maps_to_503(api: ModuleType):
    from routes.errors import STATUS_BY_ERROR

    assert issubclass(DatabaseBusy, Unavailable) and issubclass(DatabaseUnavailable, Unavailable)
    assert STATUS_BY_ERROR[Unavailable] == 503
