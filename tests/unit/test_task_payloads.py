"""The reservation state machine and its tasks agree on names (gpudev/lifecycle/payloads.py):
every task the ASL invokes exists with the fields its payload passes, every value a Choice
state compares a task's result with is one the task's output can take, and every path that
reads a task's result names a field its output has."""

from __future__ import annotations

import enum
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from gpudev.lifecycle.dispatch import TASKS
from gpudev.lifecycle.payloads import Ending, TaskInput, TaskName, parse_task

ROOT = Path(__file__).resolve().parents[2]
ASL = json.loads((ROOT / "statemachines/reservation.asl.json").read_text())
STATES: dict[str, dict[str, Any]] = ASL["States"]
INPUTS: dict[TaskName, type[BaseModel]] = {
    model.model_fields["task"].default: model for model in typing.get_args(TaskInput)
}


def _key(name: str) -> str:
    return name.removesuffix(".$")


def _task_states() -> dict[str, dict[str, Any]]:
    return {
        name: state
        for name, state in STATES.items()
        if state["Type"] == "Task" and "task" in state["Parameters"]["Payload"]
    }


def _values(model: type[BaseModel], field: str) -> set[str]:
    """Every value `field` of `model` can take (a Literal or an enum)."""
    annotation = model.model_fields[field].annotation
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {str(member.value) for member in annotation}
    values = set(typing.get_args(annotation))
    assert values, f"{model.__name__}.{field} is not a Literal or an enum"
    return {str(v.value if isinstance(v, enum.Enum) else v) for v in values}


def _result(state: dict[str, Any]) -> tuple[str, dict[str, str | None]]:
    """Where a Task state puts its result (`$.x` → "x") and, per field of the result, the
    output field it comes from (None: the whole output)."""
    task = TaskName(state["Parameters"]["Payload"]["task"])
    output = TASKS[task].output
    selector = state.get("ResultSelector")
    if selector is None:  # the whole output (what a waitForTaskToken task is woken with)
        fields: dict[str, str | None] = {field: field for field in output.model_fields}
    else:
        fields = {}
        for key, path in selector.items():
            assert path.startswith("$.Payload"), (key, path)
            fields[_key(key)] = path.removeprefix("$.Payload").removeprefix(".") or None
    return state["ResultPath"].removeprefix("$."), fields


# result name → (task, its fields); a task that does not exist fails the test below
RESULTS = {
    _result(state)[0]: (TaskName(state["Parameters"]["Payload"]["task"]), _result(state)[1])
    for state in _task_states().values()
    if state["Parameters"]["Payload"]["task"] in set(TaskName)
}


def test_the_asl_invokes_every_task_and_only_tasks_that_exist():
    invoked = {state["Parameters"]["Payload"]["task"] for state in _task_states().values()}
    assert invoked == set(TaskName) == set(TASKS) == set(INPUTS)


@pytest.mark.parametrize("state_name", sorted(_task_states()))
def test_each_task_payload_passes_exactly_what_its_input_model_takes(state_name):
    payload = STATES[state_name]["Parameters"]["Payload"]
    assert payload["task"] in set(TaskName), state_name
    model = INPUTS[TaskName(payload["task"])]
    passed = {_key(key) for key in payload}
    required = {name for name, field in model.model_fields.items() if field.is_required()}
    assert required <= passed <= set(model.model_fields), state_name
    waits = STATES[state_name]["Resource"].endswith(".waitForTaskToken")
    assert waits == TASKS[TaskName(payload["task"])].parks, state_name


def _choices(rule: dict[str, Any]) -> typing.Iterator[dict[str, Any]]:
    yield rule
    for nested in rule.get("And", []) + rule.get("Or", []) + [rule.get("Not", {})]:
        if nested:
            yield from _choices(nested)


COMPARISONS = [
    (name, rule["Variable"], rule["StringEquals"])
    for name, state in STATES.items()
    if state["Type"] == "Choice"
    for choice in state["Choices"]
    for rule in _choices(choice)
    if "StringEquals" in rule
]


def test_the_choice_states_compare_task_results():
    assert {variable for _, variable, _ in COMPARISONS} == {
        "$.start.outcome",
        "$.capacity.outcome",
        "$.provision.outcome",
        "$.ready.outcome",
        "$.checkpoint.outcome",
        "$.result.status",
        "$.disk.outcome",
        "$.volume.outcome",
        "$.save.outcome",
        "$.build.outcome",
    }


@pytest.mark.parametrize(("state", "variable", "value"), COMPARISONS)
def test_every_value_a_choice_compares_is_one_the_task_output_can_take(state, variable, value):
    result, field = variable.removeprefix("$.").split(".", 1)
    task, fields = RESULTS[result]
    output_field = fields[field]
    assert output_field is not None, variable
    assert value in _values(TASKS[task].output, output_field), (state, variable, value)


def _paths(node: Any) -> typing.Iterator[str]:
    """Every JSONPath the ASL reads (`…Path` fields and `….$` keys)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str) and (key.endswith(".$") or key.endswith("Path")):
                yield value
            else:
                yield from _paths(value)
    elif isinstance(node, list):
        for item in node:
            yield from _paths(item)


def test_every_path_into_a_task_result_names_a_field_its_output_has():
    checked = 0
    for path in _paths(STATES):
        parts = path.removeprefix("$.").split(".")
        if not path.startswith("$.") or parts[0] not in RESULTS or len(parts) < 2:
            continue
        task, fields = RESULTS[parts[0]]
        assert parts[1] in fields, path
        if fields[parts[1]] is None and len(parts) > 2:  # into the whole output
            assert parts[2] in TASKS[task].output.model_fields, path
        checked += 1
    assert checked >= 5  # the timeouts, the poll, the failure reason, the choices


ENDINGS = {
    name: {**state.get("Result", {}), **state.get("Parameters", {})}
    for name, state in STATES.items()
    if state["Type"] == "Pass" and state.get("ResultPath") == "$.ending"
}


@pytest.mark.parametrize("state_name", sorted(ENDINGS))
def test_every_ending_the_asl_passes_to_tear_down_is_one_it_takes(state_name):
    ending = ENDINGS[state_name]
    assert {_key(key) for key in ending} <= set(Ending.model_fields), state_name
    assert ending["kind"] in _values(Ending, "kind"), state_name


@pytest.mark.parametrize(
    "event_file", sorted((ROOT / "events/reservation_tasks").glob("*.json")), ids=lambda p: p.stem
)
def test_the_console_test_events_are_valid_task_payloads(event_file):
    task = parse_task(json.loads(event_file.read_text()))
    assert task.task == event_file.stem
