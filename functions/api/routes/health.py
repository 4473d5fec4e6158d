"""Public liveness: the one route without IAM auth (declared in cdk_app/declaration.py)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel

from routes.answers import Caller, answers

router = Router()


class Health(BaseModel):
    status: str


@router.get("/health", responses=answers(200, Health, "the API answers", caller=Caller.NONE))
def health() -> Health:
    return Health(status="ok")
