"""The REST API behind API Gateway (AWS_IAM auth on every route but /health).

One powertools `Router` per area under `routes/`; each route parses, makes one service call
for its checked caller (`routes/caller.py`) and answers. Rules live in the layer; errors
become HTTP statuses in `routes/errors.py`, and only there.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from gpudev.observability import logger, tracer
from routes import (
    admin,
    availability,
    disks,
    health,
    logs,
    notifications,
    reservations,
    shares,
    usage,
    users,
    utilisation,
)
from routes.errors import map_errors
from routes.resolver import ContractResolver

API_TITLE = "gpu-dev API"
API_VERSION = "1"

app = ContractResolver()
map_errors(app)
for area in (
    health,
    users,
    reservations,
    logs,
    disks,
    availability,
    usage,
    admin,
    utilisation,
    notifications,
    shares,
):
    app.include_router(area.router)


# Responses carry Jupyter URLs with their tokens: never recorded as trace metadata (every
# function also has POWERTOOLS_TRACER_CAPTURE_RESPONSE=false; this holds without it).
@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
