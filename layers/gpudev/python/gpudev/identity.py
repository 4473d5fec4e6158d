"""Who is calling: the IAM principal API Gateway verified, the username we derive, and the
rules that decide whether that principal may act as that username.

The username is the session name of an assumed role (SSO users arrive as
`assumed-role/<role>/<session>`, the session being their login) or the user name of an IAM
user. It names pods, disks and EBS tags, so it is restricted to characters all of those
accept.

A username is not an identity: `assumed-role/<any role>/alice`, `user/alice` and
`user/contractors/alice` all derive `alice`. So each user row is bound to the canonical
principal that created it (`Caller.principal_arn`: account, kind, role name or IAM user
path and name, session name), and every request compares the caller's canonical principal
with the bound one exactly (`require_bound`). The role's path is not in the principal:
API Gateway's `userArn` for a session omits it, and role names are unique in an account
whatever their path, so account + role name + session name identify the session's role.
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
# IAM's own rules: role names [\w+=,.@-]{1,64}; paths /segment/.../ of the same characters.
_ROLE_NAME = re.compile(r"^[\w+=,.@-]{1,64}$")
_IAM_USER_PATH = re.compile(r"^(?:[\w+=,.@-]+/)*$")


class NotAuthorized(GpuDevError):
    """The caller is authenticated but not allowed to do this as this user."""


@dataclass(frozen=True)
class Caller:
    principal_arn: str  # canonical: what a user row is bound to, compared exactly
    account_id: str
    username: str
    role_name: str | None  # None for an IAM user
    org_id: str | None = None  # the principal's AWS Organizations id, when API Gateway gives it


def caller_from_arn(principal_arn: str, org_id: str | None = None) -> Caller:
    """Parse API Gateway's `requestContext.identity.userArn` into a canonical caller."""
    match = _ARN.match(principal_arn or "")
    if not match:
        raise NotAuthorized(f"unsupported principal {principal_arn!r}")
    partition, account, kind, path = (
        match["partition"],
        match["account"],
        match["kind"],
        match["path"],
    )
    if kind == "assumed-role" and match["service"] == "sts":
        role_name, _, username = path.partition("/")
        if not _ROLE_NAME.match(role_name):
            raise NotAuthorized(f"unsupported principal {principal_arn!r}")
        canonical = f"arn:{partition}:sts::{account}:assumed-role/{role_name}/{username}"
    elif kind == "user" and match["service"] == "iam":
        role_name = None
        user_path, _, username = path.rpartition("/")  # IAM users may have a path
        user_path = f"{user_path}/" if user_path else ""
        if path.startswith("/") or not _IAM_USER_PATH.match(user_path):
            raise NotAuthorized(f"unsupported principal {principal_arn!r}")
        canonical = f"arn:{partition}:iam::{account}:user/{user_path}{username}"
    elif kind == "role":
        raise NotAuthorized("call with a role session or an IAM user, not a role ARN")
    else:
        raise NotAuthorized(f"unsupported principal {principal_arn!r}")
    if not _USERNAME.match(username or ""):
        raise NotAuthorized(f"cannot derive a username from {principal_arn!r}")
    return Caller(canonical, account, username, role_name, org_id or None)


SSO_ROLE_PREFIX = "AWSReservedSSO_"
_SSO_ROLE_HASH = re.compile(r"^[0-9a-f]{16}$")


@dataclass(frozen=True)
class RolePattern:
    """One `ALLOWED_ROLES` entry: `[path/]name` with an optional trailing `*` on the name
    (Identity Center appends a per-account hash to a permission set's role name:
    `aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevUsers_*`)."""

    path: str  # "/aws-reserved/sso.amazonaws.com/" or "/" (IAM's path form)
    name: str  # without the trailing '*'
    prefix: bool  # True: the name is a prefix

    @classmethod
    def parse(cls, entry: str) -> RolePattern:
        text = entry.strip().strip("/")
        path, _, name = text.rpartition("/")
        prefix = name.endswith("*")
        bare = name[:-1] if prefix else name
        if "*" in path or not bare or not _ROLE_NAME.match(bare):
            raise ValueError(
                f"{entry!r}: expected [path/]RoleName with at most a trailing '*', e.g. "
                "aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevUsers_*"
            )
        return cls(f"/{path}/" if path else "/", bare, prefix)

    def matches(self, role_name: str) -> bool:
        """API Gateway gives a session's role by name only (no path), so only the last
        segment can be compared here; the REST API's resource policy compares the whole
        role ARN, path included (`aws:PrincipalArn`)."""
        if not self.prefix:
            return role_name == self.name
        if not role_name.startswith(self.name):
            return False
        if self.names_one_permission_set:
            # A permission set's role is its name plus "_" and a 16-hex-digit hash: the prefix
            # of GpuDevAdmins_ must not admit GpuDevAdmins_ReadOnly_<hash>, another set.
            return bool(_SSO_ROLE_HASH.match(role_name[len(self.name) :]))
        return True

    @property
    def names_one_permission_set(self) -> bool:
        """`AWSReservedSSO_<set>_*`: one permission set's roles (its hash follows). Not
        `AWSReservedSSO_*` alone, which is every permission set's."""
        return (
            self.prefix
            and self.name.startswith(SSO_ROLE_PREFIX)
            and self.name.endswith("_")
            and len(self.name) > len(SSO_ROLE_PREFIX)
        )

    def covers(self, other: RolePattern) -> bool:
        """Whether every role `other` matches is matched by this pattern too (same path;
        `matches` for a name, a prefix within a prefix for a pattern)."""
        if other.path != self.path:
            return False
        if not other.prefix:
            return self.matches(other.name)
        if other.name == self.name:
            return self.prefix
        # a longer prefix within ours, unless ours admits only a permission set's hash
        return (
            self.prefix and not self.names_one_permission_set and other.name.startswith(self.name)
        )

    def __str__(self) -> str:
        return f"{self.path.lstrip('/')}{self.name}{'*' if self.prefix else ''}"


def parse_role_patterns(entries: str) -> tuple[RolePattern, ...]:
    """Comma-separated `ALLOWED_ROLES` (empty, the local cloud's: see `require_allowed_role`)."""
    return tuple(RolePattern.parse(e) for e in entries.split(",") if e.strip())


def require_allowed_role(caller: Caller, allowed: tuple[RolePattern, ...], account_id: str) -> None:
    """Admit only principals whose name their holder cannot choose, since the name is the
    username and the first principal to use a username claims it (docs/security.md,
    "Usernames can't be squatted").

    With roles configured (every deployment: the synth refuses none), only sessions of those
    roles: their session names are set by an identity provider (`make deploy-check` checks
    their trust policies). An IAM user has no role and is refused. Without roles (the local
    cloud, tests): IAM users of the deployment's account, whose names only its IAM
    administrators choose, and IAM Identity Center sessions, named after the user's login.
    A session of any other role is refused: whoever may assume the role picks its session
    name, so it could claim anyone's username before they do. Without roles, the path of an
    Identity Center role cannot be checked (API Gateway gives the name only), so an IAM
    administrator could name a role like one: that is why deployments must list roles, and
    the resource policy then checks the path."""
    if allowed:
        if caller.role_name is not None and any(p.matches(caller.role_name) for p in allowed):
            return
        raise NotAuthorized(
            f"gpu-dev accepts sessions of the roles {', '.join(sorted(map(str, allowed)))}; "
            f"you called as {caller.principal_arn}"
        )
    if caller.role_name is None:
        if caller.account_id == account_id:
            return
        raise NotAuthorized(
            "gpu-dev accepts IAM users of its own account only; an IAM user of another "
            f"account is named by that account's administrators. You called as "
            f"{caller.principal_arn}"
        )
    if is_identity_center_role(caller.role_name):
        return
    raise NotAuthorized(
        f"sessions of the role {caller.role_name} choose their own session name, so gpu-dev "
        "cannot take it as a username; sign in with IAM Identity Center (or as an IAM user), "
        "or ask an operator to list your role in gpudev:allowedRoles if an identity provider "
        f"sets its session names. You called as {caller.principal_arn}"
    )


def is_identity_center_role(role_name: str) -> bool:
    """A permission set's role: `AWSReservedSSO_<set>_<16 hex digits>`. Identity Center sets
    its sessions' names to the user's login."""
    if not role_name.startswith(SSO_ROLE_PREFIX):
        return False
    permission_set, _, suffix = role_name[len(SSO_ROLE_PREFIX) :].rpartition("_")
    return bool(permission_set) and bool(_SSO_ROLE_HASH.match(suffix))


def require_account(caller: Caller, account_id: str, organization_id: str | None = None) -> None:
    """Only principals of the deployment's account (or, when configured, of its AWS
    organisation) may call; user rows are never shared across accounts."""
    if caller.account_id == account_id:
        return
    if organization_id and caller.org_id == organization_id:
        return
    raise NotAuthorized(
        f"gpu-dev accepts principals of account {account_id}"
        + (f" or organisation {organization_id}" if organization_id else "")
        + f"; you called from another account as {caller.principal_arn}"
    )


def require_bound(caller: Caller, bound_principal: str | None) -> None:
    """Refuse a caller whose username is bound to another principal (None: not bound yet).
    The message names the caller's principal, never the bound one."""
    if bound_principal is None or bound_principal == caller.principal_arn:
        return
    raise bound_elsewhere(caller)


def bound_elsewhere(caller: Caller) -> NotAuthorized:
    return NotAuthorized(
        f"the username {caller.username} belongs to another principal; you called as "
        f"{caller.principal_arn}. Ask an administrator if this username should be yours"
    )


_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::(?P<account>\d{12}):role/(?P<role>.+)$")


@dataclass(frozen=True)
class AdminRole:
    """One `ADMIN_ROLES` entry: an IAM role ARN, `arn:aws:iam::<account>:role/[path/]Name`,
    the name optionally ending in `*` (an Identity Center permission set's role)."""

    account_id: str
    role: RolePattern

    @classmethod
    def parse(cls, entry: str) -> AdminRole:
        match = _ROLE_ARN.match(entry.strip())
        if not match:
            raise ValueError(
                f"{entry!r}: expected an IAM role ARN, e.g. arn:aws:iam::123456789012:role/"
                "aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevAdmins_*"
            )
        return cls(match["account"], RolePattern.parse(match["role"]))

    def matches(self, caller: Caller) -> bool:
        return (
            caller.role_name is not None
            and caller.account_id == self.account_id
            and self.role.matches(caller.role_name)
        )


def parse_admin_roles(entries: str) -> tuple[AdminRole, ...]:
    """Comma-separated `ADMIN_ROLES` (empty: nobody is an operator)."""
    return tuple(AdminRole.parse(e) for e in entries.split(",") if e.strip())


def require_admin(caller: Caller, admins: tuple[AdminRole, ...]) -> None:
    """Operator routes: only sessions of the configured admin roles (an IAM user never)."""
    if any(admin.matches(caller) for admin in admins):
        return
    raise NotAuthorized(
        f"this is an operator route: it needs a session of an admin role; you called as "
        f"{caller.principal_arn}"
    )


PROFILING_ROLES_CONTEXT = "gpudev:profilingRoles"


def require_profiling_role(caller: Caller, profiling_roles: tuple[RolePattern, ...]) -> None:
    """A profiling reservation's pod has CAP_SYS_ADMIN in the node's user namespace, which
    is root on the node: only sessions of the roles in `PROFILING_ROLES` (CDK context
    `gpudev:profilingRoles`, the same `[path/]RoleName[*]` entries as `ALLOWED_ROLES`) may
    ask for one. None configured: nobody; an IAM user has no role and never may."""
    if caller.role_name is not None and any(p.matches(caller.role_name) for p in profiling_roles):
        return
    roles = (
        f"the roles in {PROFILING_ROLES_CONTEXT} ({', '.join(sorted(map(str, profiling_roles)))})"
        if profiling_roles
        else f"the roles in {PROFILING_ROLES_CONTEXT}, and this deployment names none"
    )
    raise NotAuthorized(
        f"profiling gives the pod CAP_SYS_ADMIN, root on its node, so only sessions of {roles} "
        f"may ask for it; you called as {caller.principal_arn}",
        field="profiling",
        hint=f"reserve without --profiling, or ask an operator for a role in "
        f"{PROFILING_ROLES_CONTEXT}",
    )
