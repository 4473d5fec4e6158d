from __future__ import annotations

from typing import Any

import psycopg

from gpudev.errors import _CONSTRAINT_ERRORS


def test_every_mapped_constraint_exists_in_the_schema(db: psycopg.Connection[Any]):
    names = {row[0] for row in db.execute("SELECT conname FROM pg_constraint")}
    names |= {row[0] for row in db.execute("SELECT indexname FROM pg_indexes")}
    missing = sorted(set(_CONSTRAINT_ERRORS) - names)
    assert missing == [], f"errors.py maps constraints the migrations do not define: {missing}"
