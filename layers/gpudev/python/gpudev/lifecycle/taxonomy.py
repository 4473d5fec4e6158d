"""The three error names the reservation state machine knows, and the one place every
exception a task raises is mapped to one of them.

Step Functions matches Retry and Catch by exact error name (a Lambda error's name is the
exception's class name), so a task never lets a library's exception out:

- `Transient`: the world did not answer (database restarting or failing over, pool
  exhausted, Kubernetes 5xx/429 or unreachable, AWS throttling/5xx/unreachable). Retried with
  backoff and jitter for minutes; an active reservation then re-parks and tries again later.
- `StateChanged`: the row changed under the task (a conditional write matched nothing).
  Retried at once: every task starts by reading the row, so the retry sees the new state.
- `Permanent`: anything else. Nothing will change by retrying; the message (the original
  exception's class and message) becomes the reservation's failure reason.

Heavy libraries are imported only when an exception is classified.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

# AWS error codes that mean "slow down" or "not now" (botocore's own list, plus the
# services' 5xx codes); an HTTP status of 429 or 5xx counts too.
TRANSIENT_AWS_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalFailure",
        "InternalError",
        "InternalServerError",
        "InternalServerException",
        "ServiceException",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)


class StepFunctionsError(Exception):
    """Base of the error names the state machine matches (the class name is the name)."""


class Transient(StepFunctionsError):
    """Retry later: something did not answer."""


class Permanent(StepFunctionsError):
    """Fail with this message: retrying will not help."""


class StateChanged(StepFunctionsError):
    """The row changed under the task: read it again."""


ERROR_NAMES = (Transient.__name__, Permanent.__name__, StateChanged.__name__)


def _http_status(exc: BaseException) -> int:
    return int(getattr(exc, "status", 0) or 0)


def _transient_database(exc: BaseException) -> bool:
    import psycopg
    from psycopg import errors
    from psycopg_pool import PoolTimeout

    from gpudev.errors import DatabaseBusy, DatabaseUnavailable

    # OperationalError covers a lost or refused connection (AdminShutdown, CannotConnectNow,
    # ConnectionFailure, TooManyConnections), serialization failures and deadlocks,
    # QueryCanceled from statement_timeout, and the pool's PoolTimeout/TooManyRequests.
    # A writer that became a reader (Aurora failover) answers ReadOnlySqlTransaction.
    return isinstance(
        exc,
        psycopg.OperationalError
        | PoolTimeout
        | errors.ReadOnlySqlTransaction
        # the layer's names for statement/lock timeouts and an exhausted pool
        | DatabaseBusy
        | DatabaseUnavailable,
    )


def _transient_kubernetes(exc: BaseException) -> bool:
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import HTTPError

    from gpudev.cluster.objects_client import KubernetesUnavailable

    if isinstance(exc, KubernetesUnavailable | HTTPError):
        return True
    return isinstance(exc, ApiException) and (_http_status(exc) >= 500 or _http_status(exc) == 429)


def _transient_aws(exc: BaseException) -> bool:
    from botocore.exceptions import ClientError, ConnectionError, HTTPClientError

    if isinstance(exc, ConnectionError | HTTPClientError):  # unreachable, timed out, reset
        return True
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        return error.get("Code") in TRANSIENT_AWS_CODES or status >= 500 or status == 429
    return False


def classify(exc: BaseException) -> type[StepFunctionsError]:
    """The error name the state machine sees for `exc`."""
    if isinstance(exc, StepFunctionsError):
        return type(exc)
    if isinstance(exc, ConnectionError | TimeoutError):  # sockets: refused, reset, timed out
        return Transient
    for transient in (_transient_database, _transient_kubernetes, _transient_aws):
        if transient(exc):
            return Transient
    return Permanent


# What a reservation waits for while a transient fault lasts, for its status line
# (lifecycle/outages.py): the dependency that did not answer.
WAITING_FOR_DATABASE = "waiting for the database"
WAITING_FOR_KUBERNETES = "waiting for the Kubernetes API"
WAITING_FOR_AWS = "waiting for AWS"
WAITING_FOR_GITHUB = "waiting for GitHub"
WAITING_LINES = (WAITING_FOR_DATABASE, WAITING_FOR_KUBERNETES, WAITING_FOR_AWS, WAITING_FOR_GITHUB)


def waiting_for(exc: BaseException) -> str | None:
    """The status line's reason for a transient `exc` (or the exception it was raised
    from): which dependency did not answer; None for a fault of no one dependency."""
    from gpudev.lifecycle.keys import GithubUnavailable

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, GithubUnavailable):
            return WAITING_FOR_GITHUB
        for transient, line in (
            (_transient_database, WAITING_FOR_DATABASE),
            (_transient_kubernetes, WAITING_FOR_KUBERNETES),
            (_transient_aws, WAITING_FOR_AWS),
        ):
            if transient(seen):
                return line
        seen = seen.__cause__
    return None


def as_step_functions_error(exc: BaseException) -> StepFunctionsError:
    """`exc` as the exception whose class name the state machine matches; the message keeps
    the original class so the failure reason and the logs say what happened."""
    if isinstance(exc, StepFunctionsError):
        return exc
    message = str(exc).strip()
    return classify(exc)(f"{type(exc).__name__}: {message}" if message else type(exc).__name__)


@contextmanager
def step_functions_errors() -> Iterator[None]:
    """Raise whatever escapes the block under its state machine error name."""
    try:
        yield
    except Exception as exc:
        mapped = as_step_functions_error(exc)
        if mapped is exc:
            raise
        raise mapped from exc
