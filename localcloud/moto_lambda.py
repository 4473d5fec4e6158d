"""The one private seam in moto we rely on: Lambda invocations run our handlers in-process.

moto runs Lambda code in Docker (not available here) and has no public hook for a local
handler. Replacing `LambdaFunction._invoke_lambda(event) -> (payload, errored, logs)` serves
every path that invokes a function: `lambda:Invoke`, Step Functions Lambda tasks, and event
source mappings. moto is pinned exactly and tests/unit/test_moto_seam.py fails loudly if
this method moves or changes shape.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

from moto.awslambda.models import LambdaFunction

from localcloud.lambdas import LocalLambda

EXPECTED_SIGNATURE = "(self, event: 'str | None' = None) -> 'tuple[str, bool, str]'"


_MOTO_INVOKE = LambdaFunction._invoke_lambda


def seam_signature() -> str:
    """The signature of moto's own method (not of our replacement)."""
    return str(inspect.signature(_MOTO_INVOKE))


def install(local_lambda: LocalLambda, function_names: dict[str, str]) -> Callable[[], None]:
    """Route invocations of moto function `function_names[key]` to `local_lambda`'s `key`."""
    by_moto_name = {moto_name: name for name, moto_name in function_names.items()}

    def _invoke_lambda(self: LambdaFunction, event: Any = None) -> tuple[str, bool, str]:
        name = by_moto_name.get(self.function_name)
        if name is None:
            error = {
                "errorType": "ResourceNotFoundException",
                "errorMessage": f"{self.function_name} is not a gpu-dev function",
            }
            return json.dumps(error), True, ""
        if isinstance(event, str | bytes):
            event = json.loads(event or "{}")
        invocation = local_lambda.invoke(name, event if event is not None else {})
        return json.dumps(invocation.payload, default=str), invocation.errored, ""

    LambdaFunction._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]

    def uninstall() -> None:
        LambdaFunction._invoke_lambda = _MOTO_INVOKE  # type: ignore[method-assign]

    return uninstall
