"""Applies migrations/ to Aurora; run by a CDK Trigger on deploy (and by hand if needed)."""

from __future__ import annotations

from typing import Any

import psycopg
from aws_lambda_powertools.utilities.typing import LambdaContext

from gpudev.db.migrations import apply_migrations, default_migrations_dir
from gpudev.db.pool import connect_kwargs, conninfo
from gpudev.observability import logger, tracer
from gpudev.settings import database_settings


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    # A direct autocommit connection: each migration manages its own transaction.
    settings = database_settings()
    with psycopg.connect(conninfo(settings), autocommit=True, **connect_kwargs(settings)) as conn:
        applied = apply_migrations(conn, default_migrations_dir())
    names = [f"{m.version:04d}_{m.name}" for m in applied]
    logger.info("migrations applied", extra={"applied": names})
    return {"applied": names}
