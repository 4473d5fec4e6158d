"""Turns constraint violations raised by PostgreSQL into domain errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from gpudev.errors import constraint_error


@contextmanager
def domain_errors() -> Iterator[None]:
    try:
        yield
    except psycopg.errors.IntegrityError as exc:
        raise constraint_error(exc.diag.constraint_name, exc.diag.message_primary) from exc
