"""A function's asset carries its runtime code only: every file in it is the handler or a
module the handler's imports reach (a build script, a README or a test beside a handler
would ship to Lambda; build scripts live in tools/)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from cdk_app.declaration import DEPLOYMENT, FunctionSpec


def _module_files(folder: Path, dotted: str) -> set[Path]:
    """The files of `dotted` (and its parent packages) inside the function folder, if any."""
    found: set[Path] = set()
    parts = dotted.split(".")
    for depth in range(1, len(parts) + 1):
        base = folder.joinpath(*parts[:depth])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                found.add(candidate)
    return found


def _imported(path: Path, folder: Path) -> set[Path]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return set().union(*(_module_files(folder, name) for name in names))


def _runtime_files(spec: FunctionSpec) -> set[str]:
    """The handler module and every file of the folder its imports reach, transitively."""
    module = spec.handler.rpartition(".")[0]
    reached = _module_files(spec.code_dir, module)
    pending = set(reached)
    while pending:
        for found in _imported(pending.pop(), spec.code_dir) - reached:
            reached.add(found)
            pending.add(found)
    return {str(p.relative_to(spec.code_dir)) for p in reached}


@pytest.fixture(scope="module")
def asset_dirs(synthesized: tuple[Any, Path], template: Any) -> dict[str, Path]:
    """Deployed function name → its asset folder in the cloud assembly."""
    _, outdir = synthesized
    found = {}
    for function in template.find_resources("AWS::Lambda::Function").values():
        properties = function["Properties"]
        name = properties.get("Environment", {}).get("Variables", {}).get("POWERTOOLS_SERVICE_NAME")
        key = properties["Code"].get("S3Key")
        if name and isinstance(key, str):
            found[name] = outdir / f"asset.{key.removesuffix('.zip')}"
    return found


@pytest.mark.parametrize("spec", DEPLOYMENT.functions, ids=lambda spec: spec.name)
def test_a_function_asset_holds_only_what_its_handler_imports(
    spec: FunctionSpec, asset_dirs: dict[str, Path]
):
    asset = asset_dirs[spec.deployed_name]
    shipped = {str(p.relative_to(asset)) for p in asset.rglob("*") if p.is_file()}
    assert shipped == _runtime_files(spec)


def test_the_api_asset_holds_its_routes_and_no_build_script(asset_dirs: dict[str, Path]):
    shipped = {p.name for p in asset_dirs["gpudev-api"].rglob("*.py")}
    assert {"handler.py", "caller.py", "errors.py", "reservations.py"} <= shipped
    assert "openapi.py" not in shipped
