"""The API's tracer is made at the handler's first invocation, not at import, and traces
from then on as powertools' own decorator does (gpudev.observability.LazyTracer)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from gpudev.observability import TRACED_MODULES, LazyTracer


def _context() -> Any:
    return SimpleNamespace(function_name="gpudev-api", aws_request_id="request")


def test_the_tracer_is_made_at_the_first_invocation_and_kept():
    lazy = LazyTracer(TRACED_MODULES)
    calls: list[Any] = []

    @lazy.capture_lambda_handler(capture_response=False)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        calls.append(event)
        return {"statusCode": 200}

    assert lazy._tracer is None  # decorating made nothing
    assert handler({"n": 1}, _context()) == {"statusCode": 200}
    first = lazy._tracer
    assert first is not None
    assert handler({"n": 2}, _context()) == {"statusCode": 200}
    assert lazy._tracer is first and calls == [{"n": 1}, {"n": 2}]
    assert handler.__name__ == "handler"


def test_the_tracer_patches_only_what_the_functions_use():
    assert set(TRACED_MODULES) == {"botocore", "psycopg", "httplib"}
    assert LazyTracer(TRACED_MODULES).tracer._config["patch_modules"] == TRACED_MODULES


def test_errors_reach_the_caller_unchanged():
    lazy = LazyTracer(TRACED_MODULES)

    @lazy.capture_lambda_handler(capture_response=False)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        handler({}, _context())


def test_every_function_handler_is_traced():
    """Each handler makes the tracer at its first invocation: that is when its AWS calls, SQL
    and HTTP get patched (nothing is patched at import any more)."""
    import ast
    from pathlib import Path

    functions = Path(__file__).resolve().parents[2] / "functions"
    untraced = []
    for path in sorted(functions.glob("*/handler.py")):
        tree = ast.parse(path.read_text())
        handler = next(
            node
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name == "handler"
        )
        if not any(
            isinstance(d, ast.Call)
            and isinstance(d.func, ast.Attribute)
            and d.func.attr == "capture_lambda_handler"
            and isinstance(d.func.value, ast.Name)
            and d.func.value.id == "tracer"
            for d in handler.decorator_list
        ):
            untraced.append(path.parent.name)
    assert untraced == []
