"""Running a named statement (`db/queries.py`) and reading its rows as a type.

`fetch_one`, `fetch_returned` and `fetch_all` give each row as `row_type` (a model or
dataclass whose fields are the statement's columns); `fetch_columns` gives one tuple per
column instead, for the statements that read so many rows that an object per row costs more
than the work done with them; `column_arrays` turns values into the one-array-per-column
parameters of the statements that write many rows with `unnest`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import psycopg
from psycopg.rows import class_row

from gpudev.db.queries import query

T = TypeVar("T")


def fetch_one(
    conn: psycopg.Connection[Any],
    name: str,
    row_type: type[T],
    params: Mapping[str, Any] | None = None,
) -> T | None:
    """The first row of the statement `name`, or None when it returns none."""
    with conn.cursor(row_factory=class_row(row_type)) as cur:
        return cur.execute(query(name), params).fetchone()


def fetch_returned(
    conn: psycopg.Connection[Any],
    name: str,
    row_type: type[T],
    params: Mapping[str, Any] | None = None,
) -> T:
    """The row the statement `name` always returns (an insert's `RETURNING`)."""
    row = fetch_one(conn, name, row_type, params)
    assert row is not None, f"{name} returned no row"
    return row


def fetch_all(
    conn: psycopg.Connection[Any],
    name: str,
    row_type: type[T],
    params: Mapping[str, Any] | None = None,
) -> list[T]:
    """Every row of the statement `name`."""
    with conn.cursor(row_factory=class_row(row_type)) as cur:
        return cur.execute(query(name), params).fetchall()


def fetch_columns(
    conn: psycopg.Connection[Any],
    name: str,
    columns_type: type[T],
    params: Mapping[str, Any] | None = None,
) -> T:
    """Every row of the statement `name`, as `columns_type` built from one tuple per column
    (its fields are the statement's columns, in order). Rows come in binary: numbers, ids
    and times need no parsing from text."""
    with conn.cursor(binary=True) as cur:
        cur.execute(query(name), params)
        rows = cur.fetchall()
        width = len(cur.description or ())
    columns = list(zip(*rows, strict=True)) if rows else [()] * width
    return columns_type(*columns)


def column_arrays(
    values: Sequence[object], *same_names: str, **attributes: str
) -> dict[str, list[Any]]:
    """One array per parameter, for a statement that `unnest`s them: each positional name is
    a parameter named after the attribute of `values` it takes, each keyword a parameter
    and its attribute. `column_arrays(nodes, "slots", names="name")` is
    `{"slots": [n.slots for n in nodes], "names": [n.name for n in nodes]}`."""
    attributes = {name: name for name in same_names} | attributes
    return {
        parameter: [getattr(value, attribute) for value in values]
        for parameter, attribute in attributes.items()
    }
