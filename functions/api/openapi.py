"""Writes the OpenAPI document generated from the API's routes and models
(`make openapi` → docs/openapi.json; a unit test fails when the committed one is stale)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # the function folder, as Lambda's task root

import handler


def document() -> str:
    schema = handler.app.get_openapi_json_schema(
        title=handler.API_TITLE, version=handler.API_VERSION
    )
    return json.dumps(json.loads(schema), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(document())
