"""Validation failures become sentences (functions/api/routes/validation.py): pydantic's own
error records for the API's request models, turned into what was wrong, what was given (cut
short) and what is allowed — never `None`, never a 3,000-character echo."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from gpudev.disks.schemas import DiskRequest
from gpudev.errors import shown
from gpudev.reservations.schemas import AddUserRequest, ReservationRequest

VALIDATION = Path(__file__).resolve().parents[2] / "functions" / "api" / "routes" / "validation.py"


def _module() -> ModuleType:
    # The module imports its siblings as Lambda's task root lets it (`routes.params`).
    if str(VALIDATION.parents[1]) not in sys.path:
        sys.path.insert(0, str(VALIDATION.parents[1]))
    spec = importlib.util.spec_from_file_location("api_validation_sentences", VALIDATION)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


validation = _module()
VALID = {"gpu_type": "h100", "gpu_count": 4, "hours": 2}


def _errors(model: type[BaseModel], body: Any) -> list[dict[str, Any]]:
    """The records as powertools passes them: pydantic's, with `body` first in the loc."""
    with pytest.raises(ValidationError) as caught:
        model.model_validate(body)
    return [{**e, "loc": ("body", *e["loc"])} for e in caught.value.errors()]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"hours": 0},
            "hours must be at least 5 minutes (0.0833 h); got 0 "
            "(allowed: 5 minutes (0.0833 h) to 24 hours)",
        ),
        ({"hours": 30}, "hours must be at most 24 hours; got 30"),
        ({"hours": float("nan")}, "hours must be a finite number; got nan"),
        ({"gpu_count": -1}, "the GPU count must be at least 0 GPUs; got -1"),
        (
            {"gpu_count": 99999999999999999999},
            "the GPU count must be at most 64 GPUs; got 99999999999999999999",
        ),
        ({"gpu_count": "four"}, "the GPU count must be a whole number; got 'four'"),
        ({"gpu_type": None}, "the GPU type must be text; got null"),
        ({"name": "n" * 3000}, "name must be at most 63 characters; got "),
        ({"jupyter": []}, "jupyter must be true or false; got []"),
    ],
)
def test_each_failure_is_a_sentence_with_the_field_and_what_is_allowed(changes, message):
    problem = validation.summary(_errors(ReservationRequest, {**VALID, **changes}))
    assert problem.message.startswith(message)
    assert problem.field == next(iter(changes))
    assert problem.allowed


def test_json_values_are_quoted_as_json_spells_them_and_unknown_kinds_still_read():
    problem = validation.problem({"loc": ("body", "hours"), "type": "float_type", "input": None})
    assert problem.message.startswith("hours must be a number; got null")
    assert (
        "got true"
        in validation.problem(
            {"loc": ("body", "gpu_count"), "type": "int_type", "input": True}
        ).message
    )
    assert validation.problem({"loc": ("body", "x"), "type": "weird"}).message == "x is not valid"


def test_long_inputs_are_cut_to_forty_characters_and_counted():
    problem = validation.summary(_errors(ReservationRequest, {**VALID, "name": "n" * 3000}))
    assert f"got {shown('n' * 3000)}" in problem.message
    assert "(3,000 characters)" in problem.message and len(problem.message) < 150


def test_missing_fields_say_what_they_take():
    problem = validation.summary(_errors(ReservationRequest, {"gpu_type": "h100"}))
    assert problem.message == (
        "the GPU count is required (0 to 64, a count the GPU type accepts (`gpu-dev avail` "
        "lists them)); hours is required (5 minutes (0.0833 h) to 24 hours)"
    )
    assert problem.field == "gpu_count"


def test_a_body_that_is_not_an_object_is_said_so():
    problem = validation.summary(_errors(ReservationRequest, [1, 2]))
    assert (problem.message, problem.field) == ("the request body must be a JSON object", None)
    invalid = validation.problem({"loc": ("body",), "type": "json_invalid", "input": "{x"})
    assert invalid.message == "the request body is not valid JSON"


def test_many_failures_are_counted_past_three():
    body = {"gpu_type": "", "gpu_count": -1, "hours": 0, "name": "n" * 99, "jupyter": "x"}
    problem = validation.summary(_errors(ReservationRequest, body))
    assert problem.message.endswith("(and 2 more)") and problem.message.count(" must ") == 3


def test_other_models_and_query_parameters_read_as_well():
    assert validation.summary(_errors(DiskRequest, {"disk_name": ""})).message == (
        "the disk name must not be empty; got '' (allowed: 1-50 letters, digits, '-' or '_')"
    )
    assert validation.summary(_errors(DiskRequest, {"disk_name": "d", "size_gb": 0})).message == (
        "the disk size must be at least 1 GB; got 0 (allowed: 1 to 16384 GB)"
    )
    assert validation.summary(_errors(AddUserRequest, {})).message.startswith(
        "the GitHub username is required"
    )
    query = {"loc": ("query", "limit"), "type": "less_than_equal", "ctx": {"le": 500}, "input": "9"}
    assert validation.problem(query).message == "limit must be at most 500; got '9'"
