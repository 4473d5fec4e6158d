"""Writes the OpenAPI document generated from the API's routes and models
(`make openapi` → docs/openapi.json; a unit test fails when the committed one is stale)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

API_DIR = Path(__file__).resolve().parents[1] / "functions" / "api"


def document() -> str:
    if str(API_DIR) not in sys.path:
        sys.path.insert(0, str(API_DIR))  # the function folder, as Lambda's task root
    import handler

    schema = handler.app.get_openapi_json_schema(
        title=handler.API_TITLE, version=handler.API_VERSION
    )
    return json.dumps(with_rate_limit(json.loads(schema)), indent=2, sort_keys=True) + "\n"


RATE_LIMITED = {
    "description": "the caller's request rate is over its share (docs/architecture.md, "
    "Limits): nothing was read or written; retry after Retry-After seconds",
    "headers": {
        "Retry-After": {
            "description": "seconds until the caller's next request is accepted",
            "schema": {"type": "integer", "minimum": 1},
        }
    },
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorMessage"}}},
}


def with_rate_limit(schema: dict[str, Any]) -> dict[str, Any]:
    """Every authenticated route may answer 429 (routes/caller.py takes the caller's request
    before its service runs): declared here once instead of on each of its routes. A route
    that declares its own 429 (a per-user limit) gets the Retry-After header added."""
    for path, operations in schema["paths"].items():
        if path == "/health":
            continue
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            if "429" in responses:
                responses["429"].setdefault("headers", RATE_LIMITED["headers"])
            else:
                responses["429"] = RATE_LIMITED
    return schema


if __name__ == "__main__":
    sys.stdout.write(document())
