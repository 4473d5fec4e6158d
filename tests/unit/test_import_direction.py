"""Imports inside the shared layer go down the map at the top of docs/architecture.md, never
sideways or back up. The map is read from the document itself, so the two cannot drift."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "gpudev" / "python" / "gpudev"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAP_ROW = re.compile(r"^\s*(\d+)\s+(\w+)(?:/|\.py)\s")


def layer_map(document: str) -> dict[str, int]:
    """Each unit's tier, from the rows between the `layer-map` comments."""
    section = document.split("<!-- layer-map -->", 1)[1].split("<!-- /layer-map -->", 1)[0]
    return {m[2]: int(m[1]) for m in map(MAP_ROW.match, section.splitlines()) if m}


def units(package: Path) -> set[str]:
    """The layer's units: its subpackages and its top-level modules."""
    return {
        path.parent.name if path.name == "__init__.py" else path.stem
        for path in [*package.glob("*/__init__.py"), *package.glob("*.py")]
        if path != package / "__init__.py"
    }


def _imported_modules(node: ast.AST, module: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # relative: resolved against the importing module's package
            parent = module.split(".")[: -node.level]
            base = ".".join([*parent, base] if base else parent)
        return [f"{base}.{alias.name}" for alias in node.names]
    return []


def imports_against(package: Path, tiers: dict[str, int]) -> list[str]:
    """Every import of one unit from another of its own tier or above, as `file:line a → b`."""
    found: set[tuple[str, int, str]] = set()
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent)
        module = ".".join(relative.with_suffix("").parts)
        if len(relative.parts) < 3 and path.name == "__init__.py":
            continue
        source = relative.parts[1].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for imported in _imported_modules(node, module):
                parts = imported.split(".")
                if parts[0] != package.name or len(parts) < 2:
                    continue
                target = parts[1]
                if target != source and tiers[target] >= tiers[source]:
                    found.add((str(relative), node.lineno, f"{source} → {target}"))
    return [f"{file}:{line} {arrow}" for file, line, arrow in sorted(found)]


def test_every_unit_of_the_layer_has_a_place_on_the_map():
    assert units(LAYER) == set(layer_map(ARCHITECTURE.read_text()))


def test_no_import_runs_sideways_or_back_up_the_map():
    assert imports_against(LAYER, layer_map(ARCHITECTURE.read_text())) == []


def test_an_import_back_up_the_map_is_reported_with_its_place(tmp_path):
    package = tmp_path / "gpudev"
    for folder in ("cluster", "availability"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "availability" / "rules.py").write_text("from gpudev.cluster.words import Node\n")
    (package / "cluster" / "words.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from gpudev.availability.rules import Node\n"
        "def list_nodes():\n"
        "    from ..availability import rules\n"
    )
    tiers = {"cluster": 4, "availability": 8}

    assert imports_against(package, tiers) == [
        "gpudev/cluster/words.py:3 cluster → availability",
        "gpudev/cluster/words.py:5 cluster → availability",
    ]


def test_the_map_is_read_from_its_rows_only():
    document = "intro 3 aws.py\n<!-- layer-map -->\n```\ntier unit\n 4  db/  pool\n 0  errors.py  x\n```\n<!-- /layer-map -->\n"  # noqa: E501

    assert layer_map(document) == {"db": 4, "errors": 0}
