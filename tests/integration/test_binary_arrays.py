"""Arrays sent in PostgreSQL's binary form as built in Python (`gpudev/db/arrays.py`) read
back on the server as the values they were built from, and the epoch seconds the queue read
returns for a recorded start (`date_part`) are the moment's `timestamp()` in Python, one
float per microsecond: what lets the allocator compare recorded starts as floats."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from gpudev.db.arrays import int4_array, register_binary_arrays, timestamptz_array, uuid_array


@pytest.fixture
def arrays_conn(conn: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
    register_binary_arrays(conn)
    return conn


def test_uuids_read_back_as_the_ids_they_were_built_from(arrays_conn: psycopg.Connection[Any]):
    ids = [uuid.uuid4() for _ in range(1000)]
    text = [str(i) for i in ids[:500]] + [i.hex.upper() for i in ids[500:]]  # any form
    (back,) = arrays_conn.execute("SELECT %b::uuid[]", (uuid_array(text),)).fetchone() or ()
    assert back == ids


def test_int4s_read_back_including_the_extremes(arrays_conn: psycopg.Connection[Any]):
    values = [0, 1, -1, 2**31 - 1, -(2**31), *random.Random(3).sample(range(-(10**9), 10**9), 500)]
    (back,) = arrays_conn.execute("SELECT %b::int[]", (int4_array(values),)).fetchone() or ()
    assert back == values


def test_an_int4_out_of_range_is_refused_before_anything_is_sent():
    with pytest.raises(OverflowError):
        int4_array([2**31])


def test_moments_read_back_to_the_microsecond_with_nulls(arrays_conn: psycopg.Connection[Any]):
    rng = random.Random(5)
    base = datetime(2026, 11, 24, tzinfo=UTC)
    moments: list[datetime | None] = [
        base + timedelta(microseconds=rng.randrange(10**13)) for _ in range(300)
    ]
    moments += [None, moments[0], datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), None]
    moments += [datetime(2026, 1, 1, 3, tzinfo=UTC) + timedelta(hours=-5)]  # any offset
    (back,) = (
        arrays_conn.execute("SELECT %b::timestamptz[]", (timestamptz_array(moments),)).fetchone()
        or ()
    )
    assert back == moments


def test_empty_arrays_are_empty(arrays_conn: psycopg.Connection[Any]):
    row = arrays_conn.execute(
        "SELECT %b::uuid[], %b::int[], %b::timestamptz[]",
        (uuid_array([]), int4_array([]), timestamptz_array([])),
    ).fetchone()
    assert row == ([], [], [])


def test_columns_unnest_side_by_side(arrays_conn: psycopg.Connection[Any]):
    ids = [str(uuid.uuid4()) for _ in range(3)]
    start = datetime(2026, 11, 24, 9, 30, 0, 1, tzinfo=UTC)
    rows = arrays_conn.execute(
        "SELECT id::text, position, starts_at"
        " FROM unnest(%b::uuid[], %b::int[], %b::timestamptz[]) AS w (id, position, starts_at)",
        (uuid_array(ids), int4_array([1, 2, 3]), timestamptz_array([start, None, start])),
    ).fetchall()
    assert rows == [(ids[0], 1, start), (ids[1], 2, None), (ids[2], 3, start)]


def test_recorded_starts_read_as_epoch_seconds_are_the_moments_timestamps(
    conn: psycopg.Connection[Any],
):
    rng = random.Random(11)
    base = datetime(2026, 1, 1, tzinfo=UTC)
    moments = [base + timedelta(microseconds=rng.randrange(10**14)) for _ in range(5000)]
    moments += [moments[0] + timedelta(microseconds=1), moments[1] - timedelta(microseconds=1)]
    rows = conn.execute(
        "SELECT date_part('epoch', m) FROM unnest(%s::timestamptz[]) m", (moments,)
    ).fetchall()
    epochs = [epoch for (epoch,) in rows]
    assert epochs == [m.timestamp() for m in moments]
    assert len(set(epochs)) == len(set(moments))  # a microsecond apart is another float
