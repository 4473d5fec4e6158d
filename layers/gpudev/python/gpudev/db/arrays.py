"""Array parameters already in PostgreSQL's binary form (`array_send`'s layout), for the
statements that `unnest` a value per waiting reservation (100,000 at the scale of
`bench/allocator.py`). psycopg dumps a list element by element in Python (a call and a
`struct.pack` each, ~0.04 s per 100,000-element array); these are built in a few C calls.
Ids are sent as uuids (16 bytes each), not as text for the server to cast: at 100,000 the
cast alone took ~0.1 s.

A statement takes them like any array parameter (`%(ids)b::uuid[]`) once
`register_binary_arrays` has been called on the connection (or cursor) that sends it.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import ClassVar, TypeVar

from psycopg.abc import AdaptContext, Buffer
from psycopg.adapt import Dumper
from psycopg.pq import Format

_HEADER = struct.Struct(">iiiii")  # dimensions, has nulls, element oid, length, lower bound
_EMPTY = struct.Struct(">iii")  # an empty array has no dimension
_NULL = b"\xff\xff\xff\xff"  # an element's length of -1
_PG_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # a timestamptz counts microseconds from it
_MICROSECOND = timedelta(microseconds=1)


class BinaryArray(bytes):
    """A one-dimensional array in binary form; `oid` is its array type's, `element_oid` its
    elements'."""

    oid: ClassVar[int]
    element_oid: ClassVar[int]


class Int4Array(BinaryArray):
    oid, element_oid = 1007, 23


class UuidArray(BinaryArray):
    oid, element_oid = 2951, 2950


class TimestamptzArray(BinaryArray):
    oid, element_oid = 1185, 1184


A = TypeVar("A", bound=BinaryArray)


def _array(cls: type[A], count: int, nulls: bool, elements: bytes) -> A:
    """The array of `count` elements, each already as its length and its bytes."""
    if count == 0:
        return cls(_EMPTY.pack(0, 0, cls.element_oid))
    return cls(_HEADER.pack(1, int(nulls), cls.element_oid, count, 1) + elements)


def int4_array(values: Sequence[int]) -> Int4Array:
    """int4[] of `values` (no NULLs)."""
    elements = array("i", [4]) * (2 * len(values))  # each element: its length, its value
    elements[1::2] = array("i", values)
    if sys.byteorder == "little":
        elements.byteswap()  # to network order
    return _array(Int4Array, len(values), False, elements.tobytes())


def uuid_array(ids: Sequence[str]) -> UuidArray:
    """uuid[] of ids given as text (hyphens or not)."""
    length = "00000010"  # each element: its length (16), then its 16 bytes, all in hex
    elements = bytes.fromhex((length + length.join(ids)).replace("-", "")) if ids else b""
    return _array(UuidArray, len(ids), False, elements)


def timestamptz_array(values: Sequence[datetime | None]) -> TimestamptzArray:
    """timestamptz[] of aware datetimes (None: NULL). Each distinct value is encoded once:
    the allocator's starts are a few thousand moments shared by 100,000 waits."""
    distinct = set(values)
    encoded: dict[datetime | None, bytes] = {
        value: b"\x00\x00\x00\x08"
        + ((value - _PG_EPOCH) // _MICROSECOND).to_bytes(8, "big", signed=True)
        for value in distinct
        if value is not None
    }
    encoded[None] = _NULL
    elements = b"".join(map(encoded.__getitem__, values))
    return _array(TimestamptzArray, len(values), None in distinct, elements)


class _BinaryArrayDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: BinaryArray) -> Buffer:
        return obj


_DUMPERS = {
    cls: type(f"{cls.__name__}Dumper", (_BinaryArrayDumper,), {"oid": cls.oid})
    for cls in (Int4Array, UuidArray, TimestamptzArray)
}


def register_binary_arrays(context: AdaptContext) -> None:
    """Let `context` (a connection or cursor) send the arrays above as they are."""
    for cls, dumper in _DUMPERS.items():
        context.adapters.register_dumper(cls, dumper)
