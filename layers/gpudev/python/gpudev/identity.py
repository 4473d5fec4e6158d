"""Who is calling: the IAM principal API Gateway verified, and the username we derive.

The username is the session name of an assumed role (SSO users arrive as
`assumed-role/<role>/<session>`, the session being their login) or the user name of an IAM
user. It names pods, disks and EBS tags, so it is restricted to characters all of those
accept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudev.errors import GpuDevError

_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):(?P<service>iam|sts)::(?P<account>\d{12}):"
    r"(?P<kind>user|assumed-role|role)/(?P<path>.+)$"
)
_USERNAME = re.compile(r"^[A-Za-z0-9._@+=,-]{1,64}$")


class NotAuthorized(GpuDevError):
    """The caller is authenticated but not allowed to use gpu-dev."""


@dataclass(frozen=True)
class Caller:
    principal_arn: str
    account_id: str
    username: str
    role_name: str | None


def caller_from_arn(principal_arn: str) -> Caller:
    match = _ARN.match(principal_arn or "")
    if not match:
        raise NotAuthorized(f"unsupported principal {principal_arn!r}")
    kind, path = match["kind"], match["path"]
    role_name = None
    if kind == "assumed-role":
        role_name, _, username = path.partition("/")
    elif kind == "user":
        username = path.rsplit("/", 1)[-1]  # IAM users may have a path: user/team/alice
    else:
        raise NotAuthorized("call with a role session or an IAM user, not a role ARN")
    if not _USERNAME.match(username or ""):
        raise NotAuthorized(f"cannot derive a username from {principal_arn!r}")
    return Caller(principal_arn, match["account"], username, role_name)


def require_allowed_role(caller: Caller, allowed_roles: frozenset[str]) -> None:
    """Restrict callers to named roles (empty set: anyone the API's IAM auth lets in)."""
    if allowed_roles and caller.role_name not in allowed_roles:
        raise NotAuthorized(
            f"gpu-dev accepts sessions of the roles {', '.join(sorted(allowed_roles))}; "
            f"you called as {caller.principal_arn}"
        )
