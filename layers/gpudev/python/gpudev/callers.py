"""Who may act as whom: the checks every authenticated API request passes.

`caller_for_request` holds the checks that need no database (a supported principal, the
deployment's account or organisation, `ALLOWED_ROLES`); `bound_user` loads or creates the
caller's user row and refuses a principal other than the one the username is bound to.
Routes whose first statement already reads the caller's row (a reservation by id, a new
reservation) carry the binding check in that statement instead, so every request stays
within three SQL round trips.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from gpudev.errors import Conflict
from gpudev.identity import (
    Caller,
    caller_from_arn,
    require_account,
    require_allowed_role,
    require_bound,
)
from gpudev.models import User
from gpudev.settings import ApiSettings

if TYPE_CHECKING:
    import psycopg


def caller_for_request(
    user_arn: str | None, principal_org_id: str | None, settings: ApiSettings
) -> Caller:
    """The caller of `requestContext.identity`, if the deployment accepts it at all."""
    caller = caller_from_arn(user_arn or "", principal_org_id)
    require_account(caller, settings.deployment_account_id, settings.organization_id)
    require_allowed_role(caller, settings.allowed_role_patterns, settings.deployment_account_id)
    return caller


def bound_user(conn: psycopg.Connection[Any], caller: Caller) -> User:
    """The caller's user row (created, bound to the caller's principal, on first sight),
    in one round trip; NotAuthorized, with nothing written, for another principal."""
    # Here, not at the top: the API's routes import this module, and the repositories
    # import psycopg, which a handler's import should not pay for (bench/cold_start.py).
    from gpudev.repositories.users import UsersRepository

    users = UsersRepository(conn)
    # None: another request created the row after this statement's snapshot (a new user's
    # first requests, sent at once). Read committed: the next statement sees it.
    user = users.bind_principal(caller.username, caller.principal_arn) or users.bind_principal(
        caller.username, caller.principal_arn
    )
    if user is None:
        raise Conflict(f"the user {caller.username} was being created meanwhile; retry")
    require_bound(caller, user.principal_arn)
    return user


# The caller as the API shows them to themselves (`GET /v1/me`); no docstring: it would
# become the schema's description in docs/openapi.json.
class Me(BaseModel):
    username: str
    principal_arn: str
    account_id: str
    github_username: str | None


def describe_caller(conn: psycopg.Connection[Any], caller: Caller) -> Me:
    user = bound_user(conn, caller)
    return Me(
        username=user.username,
        principal_arn=user.principal_arn,
        account_id=caller.account_id,
        github_username=user.github_username,
    )
