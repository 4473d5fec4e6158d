"""docs/openapi.json is the API's contract: generated from the routes (`make openapi`), it
lists every route, and each route declares the statuses its code can answer, all errors in
the one error shape (functions/api/routes/answers.py). What a route can answer is read from
its code as far as that can be done honestly: what it asks of its caller (`ForCaller`,
`ForOperator`, `caller.read`/`caller.change`), whether it takes a body or parameters, and
whether it changes something (202). Which domain errors its service raises is not read."""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tools.openapi import API_DIR, document

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = json.loads((ROOT / "docs" / "openapi.json").read_text())
ERROR_SHAPE = {"$ref": "#/components/schemas/ErrorMessage"}
MIGRATION = ROOT / "migrations" / "0002_gpu_type_catalogue.sql"


def _app() -> Any:
    if str(API_DIR) not in sys.path:
        sys.path.insert(0, str(API_DIR))
    import handler

    return handler.app


def _routes() -> list[Any]:
    app = _app()
    return list(app._static_routes + app._dynamic_routes)


def _operation(route: Any) -> dict[str, Any]:
    path = re.sub(r"<(\w+)>", r"{\1}", route.path)
    return COMMITTED["paths"][path][route.method.lower()]


ROUTES = _routes()
IDS = [f"{r.method} {r.path}" for r in ROUTES]


def test_committed_openapi_document_matches_the_code():
    assert (ROOT / "docs" / "openapi.json").read_text() == document(), (
        "docs/openapi.json is stale: run `make openapi`"
    )


def test_every_route_is_in_the_document_and_nothing_else():
    routes = {(re.sub(r"<(\w+)>", r"{\1}", r.path), r.method.lower()) for r in ROUTES}
    documented = {(p, m) for p, ops in COMMITTED["paths"].items() for m in ops}
    assert documented == routes


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_every_error_a_route_declares_has_the_one_error_shape(route):
    for status, response in _operation(route)["responses"].items():
        if int(status) >= 400:
            assert response["content"]["application/json"]["schema"] == ERROR_SHAPE, status
    assert "HTTPValidationError" not in json.dumps(COMMITTED)


def _source(route: Any) -> str:
    return inspect.getsource(route.func)


def _declared(route: Any) -> set[int]:
    return {int(status) for status in _operation(route)["responses"]}


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_a_route_declares_what_asking_its_caller_can_answer(route):
    source, declared = _source(route), _declared(route)
    checked = "ForCaller" in source or "ForOperator" in source
    uses_database = "caller.read(" in source or "caller.change(" in source
    assert (403 in declared) == checked
    # the request rate is taken, and the caller bound, on the database
    assert ({409, 429, 503} <= declared) == uses_database
    assert (429 in declared) == uses_database and (503 in declared) == uses_database


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_a_route_declares_what_its_body_and_parameters_can_answer(route):
    declared = _declared(route)
    takes_body = bool(route.dependant.body_params)
    has_parameters = bool(route.dependant.path_params or route.dependant.query_params)
    assert ({400, 413, 415} <= declared) == takes_body
    assert (415 in declared) == takes_body and (400 in declared) == takes_body
    assert (422 in declared) == (takes_body or has_parameters)
    if route.dependant.path_params:
        assert 404 in declared  # what the path names may not be the caller's


@pytest.mark.parametrize("route", ROUTES, ids=IDS)
def test_a_change_answers_202(route):
    source, declared = _source(route), _declared(route)
    successes = {s for s in declared if s < 300}
    if "caller.change(" in source:
        assert 202 in successes
    else:
        assert successes == {200}


@pytest.mark.parametrize("route", [r for r in ROUTES if r.dependant.path_params], ids=str)
def test_every_path_parameter_has_a_pattern(route):
    for parameter in _operation(route)["parameters"]:
        if parameter["in"] == "path":
            assert parameter["schema"]["pattern"].startswith("^"), parameter


def test_integer_query_parameters_are_bounded():
    for operations in COMMITTED["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                schema = parameter["schema"]
                if schema.get("type") == "integer":
                    assert "minimum" in schema and "maximum" in schema, parameter


def test_the_request_schemas_state_enums_and_bounds():
    schemas = COMMITTED["components"]["schemas"]
    catalogue = re.findall(r"^\s+\('([\w-]+)',", MIGRATION.read_text(), re.MULTILINE)
    assert schemas["ReservationRequest"]["properties"]["gpu_type"]["enum"] == catalogue
    hours = schemas["ExtendRequest"]["properties"]["hours"]
    assert (hours["minimum"], hours["maximum"]) == (1.0, 24.0)
    size = schemas["DiskRequest"]["properties"]["size_gb"]["anyOf"][0]
    assert (size["minimum"], size["maximum"]) == (1, 16384)
