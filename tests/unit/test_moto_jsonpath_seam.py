"""The seam that parses each of moto's Step Functions JSONPaths once (localcloud/moto_jsonpath.py):
its canary, and that it answers as moto does while parsing each path once."""

import json
from importlib.metadata import version

import boto3
import jsonpath_ng.ext.parser
import jsonpath_ng.parser
import pytest
from jsonpath_ng.exceptions import JsonPathParserError
from moto import mock_aws
from moto.stepfunctions.parser.asl.utils.json_path import NoSuchJsonPathError, extract_json

from localcloud.moto_jsonpath import EXPECTED_PARSE_SIGNATURES, install, parse_seam_signatures
from tests.support.step_functions import create_machine, finished_execution


def test_jsonpath_ng_is_the_version_whose_expressions_were_checked_read_only():
    assert version("jsonpath-ng") == "1.16.0", (
        "re-verify that find and update_or_create leave a parsed expression unchanged "
        "(localcloud/moto_jsonpath.py shares one between threads), then re-pin"
    )


def test_moto_looks_up_the_jsonpath_parsers_we_replace_and_they_have_the_shape_we_call():
    assert parse_seam_signatures() == EXPECTED_PARSE_SIGNATURES


class _Counted:
    """Which paths each jsonpath_ng parser (the extended one, and the base one ResultPath
    uses) was built to parse."""

    def __init__(self, monkeypatch):
        self.extended: list[str] = []
        self.base: list[str] = []
        for module, name, parsed in (
            (jsonpath_ng.ext.parser, "ExtendedJsonPathParser", self.extended),
            (jsonpath_ng.parser, "JsonPathParser", self.base),
        ):
            monkeypatch.setattr(module, name, self._counting(getattr(module, name), parsed))

    @staticmethod
    def _counting(parser_class, parsed):
        class Counting(parser_class):
            def parse(self, string, lexer=None):
                parsed.append(string)
                return super().parse(string, lexer)

        return Counting


@pytest.fixture
def seam():
    uninstall = install()
    yield
    uninstall()


DATA = {
    "reservation": {"id": "r-1", "gpus": [4, 8], "tags": {"team": "core"}},
    "disks": [{"name": "home", "size": 100}, {"name": "scratch", "size": 50}],
}

PATHS = [
    "$.reservation.id",
    "$.reservation.gpus[1]",  # an array index (moto unpacks a single one)
    "$.reservation.gpus",
    "$.disks[*].name",  # a wildcard
    "$.disks[0]",
    "$.disks[*].missing",  # a wildcard that finds nothing: []
    "$",
]


def _answers(paths):
    answers = []
    for path in paths:
        try:
            answers.append(("value", extract_json(path, DATA)))
        except NoSuchJsonPathError as missing:
            answers.append(("missing", str(missing)))
    return answers


def test_extract_json_answers_as_moto_does_and_parses_each_path_once(monkeypatch):
    paths = [*PATHS, "$.reservation.owner"]  # a missing path: NoSuchJsonPathError
    moto_answers = _answers(paths)
    assert moto_answers[-1][0] == "missing"
    counted = _Counted(monkeypatch)
    uninstall = install()
    try:
        answers = [_answers(paths) for _ in range(20)]
    finally:
        uninstall()
    assert answers == [moto_answers] * 20
    assert counted.extended == paths  # each once, for 20 calls each


def test_a_malformed_path_raises_as_moto_does_every_time_and_is_not_kept(monkeypatch, seam):
    counted = _Counted(monkeypatch)
    raised = []
    for _ in range(2):
        with pytest.raises(JsonPathParserError) as error:
            extract_json("$.reservation[", DATA)
        raised.append(str(error.value))
    assert raised == ["Parse error near the end of string!"] * 2
    assert counted.extended == ["$.reservation["] * 2  # parsed again: no failure kept


MACHINE = {
    "StartAt": "Shape",
    "States": {
        "Shape": {
            "Type": "Pass",
            "Parameters": {"id.$": "$.reservation.id", "largest.$": "$.reservation.gpus[1]"},
            "ResultPath": "$.shape",
            "Next": "Decide",
        },
        "Decide": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.shape.largest", "NumericGreaterThan": 4, "Next": "Large"},
            ],
            "Default": "Large",
        },
        "Large": {"Type": "Pass", "InputPath": "$.shape", "End": True},
    },
}


def test_executions_parse_each_path_of_their_machine_once(monkeypatch, seam):
    """Every way moto's interpreter reaches a JSONPath here (Parameters, ResultPath, a Choice
    variable, InputPath) goes through the seam: three executions parse each path once."""
    counted = _Counted(monkeypatch)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        arn = create_machine(sfn, "shape", MACHINE)
        runs = [
            sfn.start_execution(stateMachineArn=arn, name=f"run-{n}", input=json.dumps(DATA))[
                "executionArn"
            ]
            for n in range(3)
        ]
        finished = [finished_execution(sfn, run) for run in runs]
    assert [f["status"] for f in finished] == ["SUCCEEDED"] * 3
    assert [json.loads(f["output"]) for f in finished] == [{"id": "r-1", "largest": 8}] * 3
    assert sorted(counted.extended) == [
        "$.reservation.gpus[1]",
        "$.reservation.id",
        "$.shape",
        "$.shape.largest",
    ]
    assert sorted(counted.base) == ["$", "$.shape"]  # ResultPath's (its default is "$")
