"""The caller: their username, bound to the principal that first used it."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from gpudev.callers import Me, describe_caller
from routes.answers import answers
from routes.caller import ForCaller

router = Router()


@router.get("/v1/me", responses=answers(200, Me, "the caller: their username and principal"))
def me(caller: ForCaller) -> Me:
    return caller.read(describe_caller)
