"""The private seams in moto we rely on: Lambda invocations run our handlers in-process, and
Step Functions' Lambda tasks reuse one client.

moto runs Lambda code in Docker (not available here) and has no public hook for a local
handler. Replacing `LambdaFunction._invoke_lambda(event) -> (payload, errored, logs)` serves
every path that invokes a function: `lambda:Invoke`, Step Functions Lambda tasks, and event
source mappings. moto's Step Functions interpreter makes a new boto3 client for every Lambda
task it runs (`boto_client_for`: ~3 ms of CPU and thousands of objects the collector then
walks, in the process the gateway shares, bench/api_load.py); AWS's service has no such cost,
so its Lambda tasks get one client per region. moto is pinned exactly and
tests/unit/test_moto_seam.py fails loudly if either moves or changes shape.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable
from typing import Any

from moto.awslambda.models import LambdaFunction
from moto.core.models import botocore_stubber
from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils
from moto.stepfunctions.parser.asl.utils import boto_client

from localcloud.lambdas import Invocation

EXPECTED_SIGNATURE = "(self, event: 'str | None' = None) -> 'tuple[str, bool, str]'"


EXPECTED_CLIENT_SIGNATURE = (
    "(region: str, service: str, state_credentials: Any = None) -> botocore.client.BaseClient"
)

_MOTO_INVOKE = LambdaFunction._invoke_lambda
_MOTO_CLIENT_FOR = boto_client.boto_client_for


def seam_signature() -> str:
    """The signature of moto's own method (not of our replacement)."""
    return str(inspect.signature(_MOTO_INVOKE))


def client_seam_signature() -> str:
    """The signature of moto's own client factory for Step Functions' Lambda tasks, or what
    is wrong: the Lambda tasks' module must call it by the name we replace."""
    if not hasattr(lambda_eval_utils, "boto_client_for"):
        return "lambda_eval_utils.boto_client_for is gone"
    return str(inspect.signature(_MOTO_CLIENT_FOR))


def _reused_clients() -> Callable[..., Any]:
    """moto's factory, once per region and way of reaching moto (its factory signs as a fixed
    dummy key whatever the state's credentials, so one client serves every task)."""
    clients: dict[tuple[str, str, bool], Any] = {}
    lock = threading.Lock()

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        key = (region, service, botocore_stubber.enabled)
        with lock:
            if key not in clients:
                clients[key] = _MOTO_CLIENT_FOR(region, service, state_credentials)
            return clients[key]

    return boto_client_for


def install(
    invoke: Callable[[str, Any], Invocation], function_names: dict[str, str]
) -> Callable[[], None]:
    """Route invocations of moto function `function_names[key]` to `invoke(key, event)`."""
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
        invocation = invoke(name, event if event is not None else {})
        return json.dumps(invocation.payload, default=str), invocation.errored, ""

    LambdaFunction._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]
    setattr(lambda_eval_utils, "boto_client_for", _reused_clients())  # noqa: B010

    def uninstall() -> None:
        LambdaFunction._invoke_lambda = _MOTO_INVOKE  # type: ignore[method-assign]
        setattr(lambda_eval_utils, "boto_client_for", _MOTO_CLIENT_FOR)  # noqa: B010

    return uninstall
