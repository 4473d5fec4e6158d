"""Databases on the test session's PostgreSQL server: named, created (from a template or
empty) and dropped. The fixtures in tests/conftest.py and the local clouds of the e2e and
lifecycle tiers (tests/support/clouds.py) use them."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo


def database_url_for(server_url: str, dbname: str) -> str:
    params = conninfo_to_dict(server_url)
    params["dbname"] = dbname
    return make_conninfo(**params)


def create_database(admin: psycopg.Connection[Any], name: str, template: str | None = None) -> None:
    from psycopg import sql

    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template:
        statement = sql.SQL("{} TEMPLATE {}").format(statement, sql.Identifier(template))
    admin.execute(statement)


def drop_database(admin: psycopg.Connection[Any], name: str) -> None:
    from psycopg import sql

    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def fetch_value(database_url: str, statement: str, *params: Any) -> Any:
    """The first column of the first row `statement` returns (None without a row), read on
    a connection of its own: what a test checks in a local cloud's database."""
    with psycopg.connect(database_url) as conn:
        row = conn.execute(statement, params).fetchone()
    return row[0] if row else None


def fetch_rows(database_url: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """Every row `statement` returns, read on a connection of its own."""
    with psycopg.connect(database_url) as conn:
        return conn.execute(statement, params).fetchall()


def insert_pending_reservation(database_url: str, reservation_id: str) -> None:
    """alice and her pending one-t4 reservation `reservation_id` (each only if absent): the
    rows the Lambda test events in events/ name."""
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn) VALUES"
            " ('alice', 'arn:aws:iam::123456789012:user/alice') ON CONFLICT DO NOTHING"
        )
        conn.execute(
            "INSERT INTO reservations (reservation_id, user_id, gpu_type, gpu_count,"
            " duration_hours, github_user) VALUES (%s, 'alice', 't4', 1, 1, 'octocat')"
            " ON CONFLICT DO NOTHING",
            (reservation_id,),
        )


def mark_ended(database_url: str, reservation_id: object, status: str) -> None:
    """Set the reservation's final `status`, end time and reason directly, as if it had
    ended (every ending has a reason: reservations_ending_reason_check)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE reservations SET status = %s, reservation_ended = now(),"
            " failure_reason = %s WHERE reservation_id = %s",
            (status, f"{status} (marked by a test)", reservation_id),
        )


def queued_changes(conn: psycopg.Connection[Any], reservation_id: object) -> int:
    """How many `reservation_changed` jobs the outbox holds for the reservation: what an
    owner's change wrote besides its row."""
    row = conn.execute(
        "SELECT count(*) FROM outbox WHERE payload->>'kind' = 'reservation_changed'"
        " AND payload->>'reservation_id' = %s",
        (str(reservation_id),),
    ).fetchone()
    return int(row[0]) if row else 0


def queued_h100(
    conn: psycopg.Connection[Any], gpus: int = 8, hours: float = 1, token: str = "token"
) -> uuid.UUID:
    """A one-node h100 reservation of alice's, queued and parked on `token` (what the
    allocator's queue reads); its id."""
    reservation_id = uuid.uuid4()
    conn.execute(
        "INSERT INTO reservations (reservation_id, user_id, status, gpu_type, gpu_count,"
        " total_nodes, duration_hours, task_token)"
        " VALUES (%s, 'alice', 'queued', 'h100', %s, 1, %s, %s)",
        (reservation_id, gpus, hours, token),
    )
    return reservation_id
