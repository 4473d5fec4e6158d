"""Two execution environments of one function, running at once in the local cloud's one
interpreter, each see only their own request.

powertools' REST resolver keeps the current event and Lambda context on its base class
(`BaseRouter.current_event`), not on the resolver: one value per process. In Lambda each
environment is its own process, so that is per environment; here the library is imported
once for all of them, and a request of one environment that resumed after another's began
read the other's event: alice's `GET /v1/me` answered as bob
(tests/e2e/test_lambda_environments.py, under CPU starvation). The pause below makes that
interleaving certain: alice's request stops after powertools took her event and before the
route reads its caller, while bob's request runs whole in a second environment."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from cdk_app.declaration import FunctionSpec
from localcloud.lambdas import Invocation, LocalLambda

# A route that finds its caller as routes/caller.py does (a Depends taking the Request),
# and one that reads the resolver's current event.
HANDLER = """
from typing import Annotated

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Depends, Request

app = APIGatewayRestResolver(enable_validation=True)


def caller(request: Request) -> str:
    return request.resolved_event.request_context.identity.user_arn


@app.get("/me")
def me(user_arn: Annotated[str, Depends(caller)]) -> dict:
    return {"caller": user_arn, "current": app.current_event.request_context.identity.user_arn}


def handler(event, context):
    return app.resolve(event, context)
"""


def _functions(tmp_path: Path) -> LocalLambda:
    (tmp_path / "whoami").mkdir()
    (tmp_path / "whoami" / "handler.py").write_text(HANDLER)
    spec = FunctionSpec(
        name="WhoAmI", folder="whoami", source_root=str(tmp_path), uses_database=False
    )
    return LocalLambda((spec,), "us-east-2")


def _event(user: str) -> dict[str, Any]:
    return {
        "resource": "/me",
        "path": "/me",
        "httpMethod": "GET",
        "headers": {},
        "multiValueHeaders": {},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {
            "resourcePath": "/me",
            "httpMethod": "GET",
            "path": "/local/me",
            "stage": "local",
            "requestId": user,
            "identity": {"userArn": f"arn:aws:sts::123456789012:assumed-role/Dev/{user}"},
        },
        "body": None,
        "isBase64Encoded": False,
    }


class PausedEvent(dict[str, Any]):
    """An event that stops its request where powertools first reads its method (route
    matching: after the resolver took the event, before the route runs) until `resume`."""

    def __init__(self, event: dict[str, Any]) -> None:
        super().__init__(event)
        self.paused = threading.Event()
        self.resume = threading.Event()

    def __getitem__(self, key: str) -> Any:
        if key == "httpMethod" and not self.paused.is_set():
            self.paused.set()
            assert self.resume.wait(timeout=60), "never resumed"
        return super().__getitem__(key)


def _users(reply: Invocation) -> tuple[str, str]:
    assert not reply.errored, reply.payload
    body = json.loads(reply.payload["body"])
    return body["caller"].rpartition("/")[2], body["current"].rpartition("/")[2]


def test_a_request_paused_mid_way_keeps_its_own_event_while_another_environment_runs(
    tmp_path: Path,
) -> None:
    functions = _functions(tmp_path)
    alice_event = PausedEvent(_event("alice"))
    replies: dict[str, Invocation] = {}

    def alice() -> None:
        replies["alice"] = functions.invoke("WhoAmI", alice_event)

    thread = threading.Thread(target=alice)
    thread.start()
    assert alice_event.paused.wait(timeout=60)
    replies["bob"] = functions.invoke("WhoAmI", _event("bob"))  # in a second environment
    alice_event.resume.set()
    thread.join(timeout=60)

    assert functions.environments("WhoAmI") == 2
    assert _users(replies["bob"]) == ("bob", "bob")
    assert _users(replies["alice"]) == ("alice", "alice")


def test_sequential_requests_of_one_environment_each_see_their_own_event(tmp_path: Path) -> None:
    """The production case: one warm environment serving alice, then bob, then alice."""
    functions = _functions(tmp_path)

    users = [_users(functions.invoke("WhoAmI", _event(user))) for user in ("alice", "bob", "alice")]

    assert functions.environments("WhoAmI") == 1
    assert users == [("alice", "alice"), ("bob", "bob"), ("alice", "alice")]


# The layer's logger, as reservation_tasks appends a key per invocation; `pause` is a hook
# the test passes in the event, called between appending the key and logging.
LOGGING_HANDLER = """
from gpudev.observability import logger


def handler(event, context):
    logger.append_keys(user=event["user"])
    event.get("pause", lambda: None)()
    return logger.get_current_keys().get("user")
"""


def test_the_layer_logger_keys_of_two_environments_running_at_once_stay_apart(
    tmp_path: Path,
) -> None:
    """powertools' Logger keeps appended keys in a dict on its formatter, once for the
    interpreter here: alice's lines would carry bob's keys (and Lambda request id)."""
    (tmp_path / "logging").mkdir()
    (tmp_path / "logging" / "handler.py").write_text(LOGGING_HANDLER)
    spec = FunctionSpec(
        name="Logging", folder="logging", source_root=str(tmp_path), uses_database=False
    )
    functions = LocalLambda((spec,), "us-east-2")
    paused, resume = threading.Event(), threading.Event()

    def pause() -> None:
        paused.set()
        assert resume.wait(timeout=60), "never resumed"

    replies: dict[str, Invocation] = {}

    def alice() -> None:
        replies["alice"] = functions.invoke("Logging", {"user": "alice", "pause": pause})

    thread = threading.Thread(target=alice)
    thread.start()
    assert paused.wait(timeout=60)
    replies["bob"] = functions.invoke("Logging", {"user": "bob"})
    resume.set()
    thread.join(timeout=60)

    assert functions.environments("Logging") == 2
    assert (replies["alice"].payload, replies["bob"].payload) == ("alice", "bob")
