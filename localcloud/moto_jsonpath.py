"""The private seams in moto's Step Functions we rely on: each JSONPath parsed once.

moto's interpreter evaluates every JSONPath of a definition (InputPath, OutputPath, the
`.$` fields of Parameters and ResultSelector, Choice variables, intrinsic functions'
arguments) through `json_path.extract_json`, which calls `jsonpath_ng.ext.parse(path)`, and
every ResultPath through `jsonpath_ng.parse(path)`, each time a state runs. Each call builds
a new ply parser and reloads its LR table: ~0.2-0.4 ms per path, ~43% of the Step Functions
interpreter's CPU under bench/api_load.py (py-spy), in the process the gateway and moto's
SQS share. AWS's service has no such cost. So each distinct path string is parsed once and
its expression reused.

The cache is keyed by the path string and bounded (`PATHS_KEPT`; paths past it are parsed
each time): the paths come from the definitions only (ours holds a few dozen), but a
long-running cloud may be given machine after machine by tests. A miss parses under a lock,
so executions starting at once parse a path once, not once each. A path that does not parse
raises as before each time it is used (only expressions are kept). Sharing an
expression between executions (threads) is safe: in jsonpath_ng 1.16.0 every attribute of
an expression is set in its constructor; `find` and `update_or_create` build new
`DatumInContext`s and change only the data given to them. moto is pinned exactly and
jsonpath_ng locked; tests/unit/test_moto_jsonpath_seam.py fails loudly if either version
changes, or moto stops looking the parsers up by the names replaced here, or they change
shape.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from types import ModuleType

import jsonpath_ng.ext.parser
import jsonpath_ng.parser
from jsonpath_ng.jsonpath import JSONPath
from moto.stepfunctions.parser.asl.component.common.path import result_path
from moto.stepfunctions.parser.asl.utils import json_path

# Distinct path strings kept parsed: ours are a few dozen; room for the machines tests deploy.
PATHS_KEPT = 1024

EXPECTED_PARSE_SIGNATURES = [
    "(path: 'str', debug: 'bool | None' = None) -> 'JSONPath'",  # for extract_json
    "(string: 'str') -> 'JSONPath'",  # for ResultPath
]

_MOTO_EXTRACT_PARSE = json_path.parse  # type: ignore[attr-defined]
_MOTO_RESULT_PATH_PARSE = result_path.parse  # type: ignore[attr-defined]

# (the module whose global `parse` moto's code looks up, the code that looks it up, moto's
# parse, the jsonpath_ng parser it must be)
_SEAMS: list[tuple[ModuleType, Callable[..., object], Callable[..., JSONPath], object]] = [
    (json_path, json_path.extract_json, _MOTO_EXTRACT_PARSE, jsonpath_ng.ext.parser.parse),
    (
        result_path,
        result_path.ResultPath._eval_body,
        _MOTO_RESULT_PATH_PARSE,
        jsonpath_ng.parser.parse,
    ),
]


def parse_seam_signatures() -> list[str]:
    """The signatures of moto's own parsers, or what is wrong: the code using each must look
    it up as its module's global `parse`, and it must be jsonpath_ng's."""
    found = []
    for module, caller, moto_parse, jsonpath_ng_parse in _SEAMS:
        if "parse" not in caller.__code__.co_names:
            found.append(f"{caller.__qualname__} no longer looks up `parse`")
        elif moto_parse is not jsonpath_ng_parse:
            found.append(f"{module.__name__}.parse is not {jsonpath_ng_parse}")
        else:
            found.append(str(inspect.signature(moto_parse)))
    return found


def _parsed_once(parse: Callable[..., JSONPath]) -> Callable[[str], JSONPath]:
    parsed: dict[str, JSONPath] = {}
    missed = threading.Lock()

    def parse_once(path: str) -> JSONPath:
        expression = parsed.get(path)
        if expression is None:
            with missed:
                expression = parsed.get(path)
                if expression is None:
                    expression = parse(path)  # a path that does not parse raises: not kept
                    if len(parsed) < PATHS_KEPT:
                        parsed[path] = expression
        return expression

    return parse_once


def install() -> Callable[[], None]:
    """Parse each JSONPath moto's Step Functions evaluate once, from now on."""
    for module, _, moto_parse, _ in _SEAMS:
        setattr(module, "parse", _parsed_once(moto_parse))  # noqa: B010

    def uninstall() -> None:
        for module, _, moto_parse, _ in _SEAMS:
            setattr(module, "parse", moto_parse)  # noqa: B010

    return uninstall
