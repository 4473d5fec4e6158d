"""Writes the OpenAPI document generated from the API's routes and models
(`make openapi` → docs/openapi.json; a unit test fails when the committed one is stale)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

API_DIR = Path(__file__).resolve().parents[1] / "functions" / "api"


def document() -> str:
    if str(API_DIR) not in sys.path:
        sys.path.insert(0, str(API_DIR))  # the function folder, as Lambda's task root
    import handler

    schema = handler.app.get_openapi_json_schema(
        title=handler.API_TITLE, version=handler.API_VERSION
    )
    return json.dumps(json.loads(schema), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(document())
