"""Helpers shared across tiers live in tests/support: bench/ imports only from there, a tier
imports only from itself and tests/support, and no one imports the root conftest or another
tier's."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _test_imports(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
        elif isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
    return {m for m in modules if m == "tests" or m.startswith("tests.")}


def _misplaced(path: Path, own_tier: str | None) -> set[str]:
    allowed = ("tests.support",) + ((f"tests.{own_tier}",) if own_tier else ())
    return {
        module
        for module in _test_imports(path)
        if module.endswith(".conftest") or not module.startswith(allowed)
    }


def test_bench_imports_test_helpers_only_from_tests_support():
    found = {str(p.relative_to(ROOT)): _misplaced(p, None) for p in (ROOT / "bench").rglob("*.py")}
    assert {name: modules for name, modules in found.items() if modules} == {}


def test_tiers_import_only_themselves_and_tests_support():
    found = {}
    for path in (ROOT / "tests").rglob("*.py"):
        tier = path.relative_to(ROOT / "tests").parts[0]
        if tier.endswith(".py"):
            continue  # tests/conftest.py, tests/__init__.py: the root of every tier
        if misplaced := _misplaced(path, tier) - {f"tests.{tier}.conftest"}:
            found[str(path.relative_to(ROOT))] = misplaced
    assert found == {}
