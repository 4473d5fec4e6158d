"""Fixtures of the integration tier."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest


@pytest.fixture
def conn(fresh_database: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection to a private database with no transaction open, as a handler's pooled one."""
    with psycopg.connect(fresh_database) as connection:
        yield connection
