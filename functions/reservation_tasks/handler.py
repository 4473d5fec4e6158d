"""The reservation state machine's tasks (statemachines/reservation.asl.json): one function,
the task named in the payload, validated into its model (gpudev/lifecycle/payloads.py).
Outcomes go back to the state machine; every error leaves as one of the names its Retry and
Catch match (`Transient`, `Permanent`, `StateChanged`: see gpudev/lifecycle/taxonomy.py),
the connection and the cluster client included; an invalid event is `Permanent`. A
`Transient` puts what the reservation waits for on its status line (lifecycle/outages.py)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from gpudev.db.pool import autocommit_connection
from gpudev.lifecycle.dispatch import run
from gpudev.lifecycle.outages import record_waiting
from gpudev.lifecycle.payloads import InvalidTaskEvent, parse_task
from gpudev.lifecycle.runtime import lifecycle
from gpudev.lifecycle.taxonomy import Permanent, StateChanged, Transient, step_functions_errors
from gpudev.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any] | None:
    try:
        task = parse_task(event)
    except InvalidTaskEvent as exc:
        raise Permanent(str(exc)) from None
    logger.append_keys(reservation_id=str(task.reservation_id), task=str(task.task))
    try:
        with step_functions_errors(), autocommit_connection() as conn:
            return run(lifecycle(conn), task)
    except (Transient, StateChanged) as exc:
        logger.warning(f"task failed, to be retried: {type(exc).__name__}: {exc}")
        if isinstance(exc, Transient):  # the status line says what it waits for
            record_waiting(autocommit_connection, task.reservation_id, exc)
        raise
    except Exception as exc:
        logger.exception(f"task failed: {type(exc).__name__}: {exc}")
        raise
