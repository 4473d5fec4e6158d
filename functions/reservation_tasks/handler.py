"""The reservation state machine's tasks (statemachines/reservation.asl.json): one function,
the task named in the payload. Outcomes go back to the state machine; every error leaves as
one of the names its Retry and Catch match (`Transient`, `Permanent`, `StateChanged`: see
gpudev/lifecycle/taxonomy.py), the connection and the cluster client included."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from aws_lambda_powertools.utilities.typing import LambdaContext

from gpudev.db.pool import autocommit_connection
from gpudev.lifecycle.runtime import lifecycle
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.lifecycle.taxonomy import Permanent, StateChanged, Transient, step_functions_errors
from gpudev.observability import logger

Task = Callable[[Lifecycle, UUID, dict[str, Any]], Any]
TASKS: dict[str, Task] = {
    "start": lambda lc, rid, e: lc.start(rid, e["execution_arn"]),
    "wait_for_capacity": lambda lc, rid, e: lc.wait_for_capacity(rid, e["task_token"]),
    "provision": lambda lc, rid, e: lc.provision(rid),
    "check_ready": lambda lc, rid, e: lc.check_ready(rid),
    "checkpoint": lambda lc, rid, e: lc.checkpoint(rid),
    "wait_while_active": lambda lc, rid, e: lc.wait_while_active(rid, e["task_token"]),
    "tear_down": lambda lc, rid, e: lc.tear_down(rid, e.get("ending") or {}),
}


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> Any:
    task = TASKS.get(event.get("task", ""))
    if task is None:
        raise Permanent(f"unknown task {event.get('task')!r}; tasks: {', '.join(TASKS)}")
    reservation_id = UUID(event["reservation_id"])
    logger.append_keys(reservation_id=str(reservation_id), task=event["task"])
    try:
        with step_functions_errors(), autocommit_connection() as conn:
            return task(lifecycle(conn), reservation_id, event)
    except (Transient, StateChanged) as exc:
        logger.warning(f"task failed, to be retried: {type(exc).__name__}: {exc}")
        raise
    except Exception as exc:
        logger.exception(f"task failed: {type(exc).__name__}: {exc}")
        raise
