"""Every statement reaches the database through a repository: named SQL (`query(...)` from
`gpudev.db.queries`) is loaded only in `gpudev/repositories/` and `gpudev/db/` (the
migration runner). Services call repositories and own the transactions."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "gpudev" / "python" / "gpudev"
SCANNED = (PACKAGE, ROOT / "functions", ROOT / "cli", ROOT / "localcloud")
ALLOWED = (PACKAGE / "repositories", PACKAGE / "db")


def _named_sql_uses(source: str) -> list[str]:
    """Where a module imports from `gpudev.db.queries` or calls a function named `query`."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "gpudev.db.queries":
            found.append(f"line {node.lineno}: from gpudev.db.queries import ...")
        elif isinstance(node, ast.Import) and any(
            alias.name == "gpudev.db.queries" for alias in node.names
        ):
            found.append(f"line {node.lineno}: import gpudev.db.queries")
        elif isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Name) and node.func.id == "query")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "query")
        ):
            found.append(f"line {node.lineno}: query(...)")
    return found


def _modules_outside_repositories() -> list[Path]:
    return sorted(
        path
        for folder in SCANNED
        for path in folder.rglob("*.py")
        if not any(path.is_relative_to(allowed) for allowed in ALLOWED)
    )


def test_named_sql_is_run_only_by_repositories():
    offenders = {
        str(path.relative_to(ROOT)): uses
        for path in _modules_outside_repositories()
        if (uses := _named_sql_uses(path.read_text()))
    }
    assert offenders == {}, (
        "named SQL outside gpudev/repositories/: add a repository method and call it "
        f"from the service instead: {offenders}"
    )


def test_the_check_finds_a_query_call_and_an_import():
    source = (
        "from gpudev.db.queries import query\n"
        "def f(conn):\n"
        "    return conn.execute(query('users/get'))\n"
    )
    assert [use.split(":")[0] for use in _named_sql_uses(source)] == ["line 1", "line 3"]
