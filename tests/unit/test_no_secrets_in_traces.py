"""X-Ray never records what a handler returns: the API's responses carry Jupyter URLs with
their tokens. Every tracer decorator in our code says capture_response=False (the deployed
functions also set POWERTOOLS_TRACER_CAPTURE_RESPONSE=false: tests/infrastructure)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*(ROOT / "functions").rglob("*.py"), *(ROOT / "layers").rglob("*.py")]


def _tracer_decorators() -> list[tuple[str, ast.expr]]:
    found = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for decorator in node.decorator_list:
                    target = decorator.func if isinstance(decorator, ast.Call) else decorator
                    if isinstance(target, ast.Attribute) and target.attr.startswith("capture_"):
                        found.append((f"{path.relative_to(ROOT)}:{node.name}", decorator))
    return found


def test_no_tracer_decorator_captures_responses():
    decorators = _tracer_decorators()
    assert decorators, "the API handler is traced"
    for where, decorator in decorators:
        keywords = {
            k.arg: k.value for k in getattr(decorator, "keywords", []) if isinstance(k, ast.keyword)
        }
        value = keywords.get("capture_response")
        assert isinstance(value, ast.Constant) and value.value is False, where
