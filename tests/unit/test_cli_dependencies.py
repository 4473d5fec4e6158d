"""`pip install 'gpu-dev[cli]'` gives a `gpu-dev` that imports: every third-party module the
CLI imports (lazily or not) comes from a distribution the package declares, in its main
dependencies or its `cli` extra; and the extra stays out of the Lambda layer."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLI_PACKAGE = ROOT / "cli" / "gpudev_cli"
LAYER_REQUIREMENTS = ROOT / "layers" / "gpudev" / "requirements.txt"


def _name(requirement: str) -> str:
    """The normalized distribution name of a requirement (PEP 503)."""
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group()).lower()


def _project() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project


def _cli_extra() -> list[str]:
    """The `cli` extra and `chart` (matplotlib, imported lazily by `--chart`)."""
    extras = _project().get("optional-dependencies", {})
    return [*extras.get("cli", []), *extras.get("chart", [])]


def _declared_for_the_cli() -> set[str]:
    return {_name(r) for r in _project()["dependencies"] + _cli_extra()}


def _imported_top_level_modules(package: Path) -> set[str]:
    modules = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules


def _third_party(modules: set[str]) -> set[str]:
    return {m for m in modules if m not in sys.stdlib_module_names and m != "__future__"}


def test_the_console_script_points_into_the_cli_package():
    module, _, function = _project()["scripts"]["gpu-dev"].partition(":")
    assert module.split(".")[0] == CLI_PACKAGE.name
    assert f"def {function}(" in (CLI_PACKAGE / (module.split(".")[1] + ".py")).read_text()


def test_every_third_party_import_of_the_cli_comes_from_a_declared_distribution():
    imported = _third_party(_imported_top_level_modules(CLI_PACKAGE)) - {CLI_PACKAGE.name}
    distributions = packages_distributions()
    missing = {
        module: distributions.get(module, ["(not installed)"])
        for module in imported
        if not {_name(d) for d in distributions.get(module, [])} & _declared_for_the_cli()
    }
    assert imported >= {"click", "rich", "botocore"}  # the reader sees the imports
    assert missing == {}, "declare them in pyproject's dependencies or its `cli` extra"


def test_the_cli_extra_is_not_shipped_in_the_lambda_layer():
    layer = {
        _name(line) for line in LAYER_REQUIREMENTS.read_text().splitlines() if line[:1].isalnum()
    }
    extra = {_name(r) for r in _cli_extra()}
    assert extra and not extra & layer
