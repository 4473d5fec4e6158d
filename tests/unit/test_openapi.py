from pathlib import Path

from tools.openapi import document

ROOT = Path(__file__).resolve().parents[2]


def test_committed_openapi_document_matches_the_code():
    generated = document()
    committed = (ROOT / "docs" / "openapi.json").read_text()
    assert committed == generated, "docs/openapi.json is stale: run `make openapi`"


def test_the_document_describes_the_reservation_routes():
    import json

    paths = json.loads((ROOT / "docs" / "openapi.json").read_text())["paths"]
    assert {"/health", "/v1/me", "/v1/reservations", "/v1/reservations/{reservation_id}"} <= set(
        paths
    )
    assert "post" in paths["/v1/reservations"] and "get" in paths["/v1/reservations"]
