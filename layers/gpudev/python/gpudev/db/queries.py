"""Named SQL statements, loaded from `gpudev/sql/<area>/<name>.sql`.

SQL lives in files (reviewable, highlighted, never assembled with f-strings). The files
ship inside the package, so they are as trusted as string literals in the code.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import LiteralString, cast

_SQL_ROOT = Path(__file__).resolve().parent.parent / "sql"


@cache
def query(name: str) -> LiteralString:
    """The statement stored at `sql/<name>.sql`, e.g. `query("users/upsert")`."""
    path = _SQL_ROOT / f"{name}.sql"
    if not path.is_file():
        raise KeyError(f"no SQL statement named {name!r} ({path})")
    return cast(LiteralString, path.read_text())  # type: ignore[redundant-cast]  # for pyright


def all_query_names() -> list[str]:
    return sorted(str(p.relative_to(_SQL_ROOT).with_suffix("")) for p in _SQL_ROOT.rglob("*.sql"))
