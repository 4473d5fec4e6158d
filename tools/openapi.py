"""Writes the OpenAPI document generated from the API's routes and models
(`make openapi` → docs/openapi.json; a unit test fails when the committed one is stale).

Each route declares what it answers (functions/api/routes/answers.py). powertools adds a 422
with its own body (`HTTPValidationError`) to every route, which the API never sends (its 422
is the one error shape, routes/errors.py): a route that declares a 422 replaces it, and this
module drops it, with its now unused schemas, from routes that cannot answer 422."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

API_DIR = Path(__file__).resolve().parents[1] / "functions" / "api"
POWERTOOLS_ONLY = ("HTTPValidationError", "ValidationError", "ResponseValidationError")


def document() -> str:
    if str(API_DIR) not in sys.path:
        sys.path.insert(0, str(API_DIR))  # the function folder, as Lambda's task root
    import handler

    schema = handler.app.get_openapi_json_schema(
        title=handler.API_TITLE, version=handler.API_VERSION
    )
    return (
        json.dumps(without_powertools_errors(json.loads(schema)), indent=2, sort_keys=True) + "\n"
    )


def _refers_to(value: Any, names: tuple[str, ...]) -> bool:
    return any(f'"#/components/schemas/{name}"' in json.dumps(value) for name in names)


def without_powertools_errors(schema: dict[str, Any]) -> dict[str, Any]:
    for operations in schema["paths"].values():
        for operation in operations.values():
            responses = operation["responses"]
            for status in [s for s, r in responses.items() if _refers_to(r, POWERTOOLS_ONLY)]:
                del responses[status]
    components = schema.get("components", {}).get("schemas", {})
    for name in POWERTOOLS_ONLY:
        rest = {k: v for k, v in schema.items() if k != "components"}
        others = {k: v for k, v in components.items() if k not in POWERTOOLS_ONLY}
        if name in components and not _refers_to([rest, others], (name,)):
            del components[name]
    return schema


if __name__ == "__main__":
    sys.stdout.write(document())
