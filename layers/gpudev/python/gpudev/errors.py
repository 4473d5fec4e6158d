"""Domain errors: named for what went wrong, mapped to HTTP and Step Functions in one place.

Database constraint violations are translated here too, by constraint name, so a caller
sees `DiskNameTaken` rather than a psycopg `UniqueViolation`.
"""

from __future__ import annotations

from typing import Any

SHOWN_CHARACTERS = 40  # user input quoted in a message is cut to this many characters


def shown(value: object) -> str:
    """User input as quoted in a message: repr'd (JSON's null, true and false as JSON spells
    them: inputs arrive as JSON), and cut short when long, so a message never echoes a
    5,000-character name back whole."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= SHOWN_CHARACTERS:
        return repr(text) if isinstance(value, str) else text
    cut = repr(text[:SHOWN_CHARACTERS]) if isinstance(value, str) else text[:SHOWN_CHARACTERS]
    return f"{cut}… ({len(text):,} characters)"


class GpuDevError(Exception):
    """Base of every error the control plane reports to a user or an operator: a sentence,
    and where it applies the request field at fault, what it allows, the limit reached and
    a hint (the API's error body carries each; routes/errors.py)."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        allowed: str | None = None,
        limit: int | None = None,
        hint: str | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.field = field
        self.allowed = allowed
        self.limit = limit
        self.hint = hint


class InvalidRequest(GpuDevError):
    """The input breaks a rule the user can fix (bad GPU type, bad disk name...)."""


class MalformedInput(GpuDevError):
    """The input cannot be read at all (an image reference outside its grammar): 400, where
    a readable value a rule refuses is `InvalidRequest` (422)."""


class NotFound(GpuDevError):
    """The thing does not exist, or belongs to someone else (we never leak which)."""


class Conflict(GpuDevError):
    """The request is valid but clashes with current state (name taken, wrong status)."""


class Gone(GpuDevError):
    """The thing existed but is going away (a disk marked for deletion)."""


class LimitReached(GpuDevError):
    """The caller is at a per-user limit (live reservations, GPUs); nothing was saved."""


class RateLimited(LimitReached):
    """The caller's request bucket is empty (ratelimit/): nothing was read or written; the
    API answers 429 with `Retry-After`."""

    def __init__(self, message: str, *, retry_after_seconds: int, limit: int, hint: str):
        super().__init__(message, limit=limit, hint=hint)
        self.retry_after_seconds = retry_after_seconds


class Unavailable(GpuDevError):
    """A dependency (the jobs queue) refused the request; nothing was saved, retry later.
    `retry_after_seconds`, when the dependency throttled us: the API's 503 says when to try
    again (`Retry-After`)."""

    def __init__(self, message: str, *, retry_after_seconds: int | None = None, **details: Any):
        super().__init__(message, **details)
        self.retry_after_seconds = retry_after_seconds


class DatabaseBusy(Unavailable):
    """A statement ran past its statement_timeout or waited past lock_timeout; its
    transaction was rolled back. Transient: the state machine retries it, the API answers
    503."""


class DatabaseUnavailable(Unavailable):
    """No pooled connection became free (or could be opened) within the pool's timeout."""


class DiskNameTaken(Conflict):
    pass


class UsernameTaken(Conflict):
    pass


class DuplicateClientRequest(Conflict):
    pass


class UnknownReference(InvalidRequest):
    """A row names something that does not exist (unknown GPU type, user...)."""


class MigrationError(GpuDevError):
    """The migrations on disk and the ones applied to the database disagree."""


# constraint name -> (error class, message). Names come from migrations/*.sql.
_CONSTRAINT_ERRORS: dict[str, tuple[type[GpuDevError], str]] = {
    "disks_user_disk_name_key": (DiskNameTaken, "you already have a disk with that name"),
    "disks_disk_name_check": (
        InvalidRequest,
        "disk names are 1-50 letters, digits, '-' or '_'",
    ),
    "users_username_key": (UsernameTaken, "that username belongs to another principal"),
    "users_github_username_check": (InvalidRequest, "not a valid GitHub username"),
    "notification_contacts_email_check": (InvalidRequest, "that is not an e-mail address"),
    "reservations_client_request_key": (
        DuplicateClientRequest,
        "a reservation with this client request id already exists",
    ),
    "reservations_status_check": (InvalidRequest, "unknown reservation status"),
    # A code path that ends a reservation without a reason (migration 0031): a bug, refused.
    "reservations_ending_reason_check": (
        InvalidRequest,
        "a reservation cannot end without a reason (failure_reason)",
    ),
    "reservations_gpu_type_fkey": (UnknownReference, "unknown GPU type"),
    "reservations_user_id_fkey": (UnknownReference, "unknown user"),
    "reservations_gpu_count_check": (InvalidRequest, "GPU count cannot be negative"),
    "reservations_total_hours_check": (
        InvalidRequest,
        "a reservation lasts at most 48 hours in total",
    ),
    "reservations_duration_hours_check": (
        InvalidRequest,
        "duration must be positive",
    ),
    # A path past images/entrypoint.py's sentences (migration 0043): refused all the same.
    "reservations_preserve_entrypoint_check": (
        InvalidRequest,
        "--preserve-entrypoint needs --image, no Jupyter and one node",
    ),
    # A path past docker/request.py's sentences (migration 0046): refused all the same.
    "reservations_docker_check": (
        InvalidRequest,
        "--docker needs one node and no profiling",
    ),
}


def constraint_error(constraint_name: str | None, detail: str | None = None) -> GpuDevError:
    """The domain error for a violated constraint (a generic Conflict if unmapped)."""
    if constraint_name in _CONSTRAINT_ERRORS:
        error_class, message = _CONSTRAINT_ERRORS[constraint_name]
        return error_class(message)
    return Conflict(detail or f"constraint {constraint_name} violated")
