"""The one way a route acts for its caller: the caller is checked first (account, allowed
roles: 403 before anything is read), then the service runs on a pooled connection.

Every read or change first takes one request from the caller's bucket (gpudev/ratelimit/,
one statement): an empty bucket is 429 with `Retry-After`, before the service reads anything.

Routes declare `caller: ForCaller` (a powertools dependency, resolved after the request is
validated) and make one call: `caller.read(service, ...)` for services that take
`(conn, caller, ...)`, `caller.change(service, ...)` for those that also take the jobs queue.

The database, AWS clients and the settings they need are imported by the first call that
uses them, not with the handler (bench/cold_start.py); a connection lost on the way
(psycopg.OperationalError) leaves as `DatabaseUnreachable`, a 503 (routes/errors.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Concatenate, ParamSpec, TypeAlias, TypeVar

from aws_lambda_powertools.event_handler import Depends, Request
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent

from gpudev.callers import caller_for_request
from gpudev.db.pool import autocommit_connection
from gpudev.identity import Caller, require_admin, require_profiling_role
from gpudev.ratelimit.rules import RequestRate
from gpudev.ratelimit.service import take_request
from gpudev.settings import api_settings, rate_limit_settings
from routes.errors import DatabaseUnreachable

if TYPE_CHECKING:
    import psycopg

    from gpudev.jobs import JobQueue

P = ParamSpec("P")
T = TypeVar("T")
Connection: TypeAlias = "psycopg.Connection[Any]"


class CallerRequest:
    """A request's checked caller and the connection modes the services expect."""

    def __init__(self, caller: Caller) -> None:
        self.caller = caller

    def require_profiling(self) -> None:
        """Profiling only for sessions of PROFILING_ROLES: 403 before anything is read."""
        require_profiling_role(self.caller, api_settings().profiling_role_patterns)

    def read(
        self,
        service: Callable[Concatenate[Connection, Caller, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """A read is the caller's binding (`bound_user`) and one query, each committing by
        itself: no BEGIN and COMMIT round trips around them (bench/api_load.py)."""
        with _reachable(), autocommit_connection() as conn:
            self._take_request(conn)
            return service(conn, self.caller, *args, **kwargs)

    def change(
        self,
        service: Callable[Concatenate[Connection, JobQueue, Caller, P], T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """A change whose job goes through the outbox: the service commits, then sends, so
        it gets an autocommit connection (its `conn.transaction()` is the commit)."""
        queue = _jobs()
        with _reachable(), autocommit_connection() as conn:
            self._take_request(conn)
            return service(conn, queue, self.caller, *args, **kwargs)

    def _take_request(self, conn: Connection) -> None:
        take_request(conn, self.caller, RequestRate.of(rate_limit_settings()))


@contextmanager
def _reachable() -> Iterator[None]:
    import psycopg  # imported already by the pool the block opens

    try:
        yield
    except psycopg.OperationalError as error:
        raise DatabaseUnreachable() from error


def _jobs() -> JobQueue:
    from gpudev.aws import aws_clients
    from gpudev.jobs import JobQueue

    return JobQueue(aws_clients().sqs, api_settings().jobs_queue_url)


def checked_caller(request: Request) -> CallerRequest:
    event = request.resolved_event
    assert isinstance(event, APIGatewayProxyEvent)
    identity = event.request_context.identity
    return CallerRequest(
        caller_for_request(identity.user_arn, identity.principal_org_id, api_settings())
    )


ForCaller = Annotated[CallerRequest, Depends(checked_caller)]


def checked_operator(request: Request) -> CallerRequest:
    """The caller, checked as for every route, and then as an operator (ADMIN_ROLES): 403
    before anything is read."""
    checked = checked_caller(request)
    require_admin(checked.caller, api_settings().admin_role_patterns)
    return checked


ForOperator = Annotated[CallerRequest, Depends(checked_operator)]
