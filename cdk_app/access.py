"""Who may invoke the REST API, from CDK context: the deployment's account (or an AWS
organisation, `gpudev:organizationId`) and only sessions of named roles
(`gpudev:allowedRoles`, entries `[path/]RoleName[*]`, never empty); and the operators
(`gpudev:adminRoles`, IAM role ARNs, the name optionally ending in `*`), whose sessions may
call `/v1/admin/...`, rendered into the API function's `ADMIN_ROLES`; and who may ask for
profiling (`gpudev:profilingRoles`, entries as `gpudev:allowedRoles`; none: nobody), whose
pods get CAP_SYS_ADMIN, rendered into its `PROFILING_ROLES`.

Both are enforced twice. The REST API's resource policy compares the caller's whole role
ARN, path included (`aws:PrincipalArn`); the API function compares the role *name* only
(API Gateway's `userArn` for a session has no role path), from the same entries rendered
into its `ALLOWED_ROLES`, and binds each username to its principal (docs/security.md,
"Security model").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpudev.identity import PROFILING_ROLES_CONTEXT, AdminRole, RolePattern

ALLOWED_ROLES_CONTEXT = "gpudev:allowedRoles"
ORGANIZATION_CONTEXT = "gpudev:organizationId"
ADMIN_ROLES_CONTEXT = "gpudev:adminRoles"
_ADMIN_ROLE_ARN = re.compile(
    r"^arn:aws[a-z-]*:iam::\d{12}:role/(?:[\w+=,.@-]+/)*[\w+=,.@-]{1,64}\*?$"
)
_ENTRY = re.compile(r"^/?(?P<path>(?:[\w+=,.@-]+/)*)(?P<name>[\w+=,.@-]{1,64}\*?)$")
_ORGANIZATION = re.compile(r"^o-[a-z0-9]{10,32}$")
OPERATOR_ROUTES = "execute-api:/*/*/v1/admin/*"  # any stage, any method
IDENTITY_CENTER_PATH = "aws-reserved/sso.amazonaws.com/"  # kept for Identity Center's roles


@dataclass(frozen=True)
class ApiAccess:
    allowed_roles: tuple[str, ...]  # [path/]RoleName[*], as ALLOWED_ROLES takes them
    organization_id: str | None
    admin_roles: tuple[str, ...] = ()  # IAM role ARNs, as ADMIN_ROLES takes them
    profiling_roles: tuple[str, ...] = ()  # [path/]RoleName[*], as PROFILING_ROLES takes them

    @classmethod
    def from_context(cls, scope: Construct) -> ApiAccess:
        roles = _role_entries(scope, ALLOWED_ROLES_CONTEXT)
        organization = scope.node.try_get_context(ORGANIZATION_CONTEXT) or None
        if organization is not None and not _ORGANIZATION.match(str(organization)):
            raise ValueError(f"{ORGANIZATION_CONTEXT}: {organization!r} is not o-xxxxxxxxxx")
        _require_roles_that_name_their_users(roles, organization)
        admin_roles = _admin_roles(scope)
        _require_admin_roles_allowed(roles, admin_roles)
        profiling_roles = _role_entries(scope, PROFILING_ROLES_CONTEXT)
        _require_profiling_roles_allowed(roles, profiling_roles)
        return cls(roles, organization, admin_roles, profiling_roles)

    def environment(self) -> dict[str, str]:
        """The API function's settings (gpudev.settings.ApiSettings)."""
        values = {
            "DEPLOYMENT_ACCOUNT_ID": Aws.ACCOUNT_ID,
            "ALLOWED_ROLES": ",".join(self.allowed_roles),
            "ADMIN_ROLES": ",".join(self.admin_roles),
            "PROFILING_ROLES": ",".join(self.profiling_roles),
        }
        if self.organization_id:
            values["ORGANIZATION_ID"] = self.organization_id
        return values

    def role_arns(self) -> list[str]:
        """IAM role ARNs of the entries; an entry without a path has IAM's default `/`."""
        account = "*" if self.organization_id else Aws.ACCOUNT_ID
        return [f"arn:{Aws.PARTITION}:iam::{account}:role/{role}" for role in self.allowed_roles]

    def resource_policy(self, public_routes: tuple[tuple[str, str], ...]) -> iam.PolicyDocument:
        """Invoke: public routes (method and path) for anyone; the rest only for principals of
        the account (or organisation) and, with allowed roles, only for their sessions. Denies
        apply to signed requests only (`aws:PrincipalAccount` present), so the public routes
        stay public; within the account, IAM policies still decide as before (no blanket
        allow)."""
        statements = [
            iam.PolicyStatement(
                sid="PublicPaths",
                principals=[iam.AnyPrincipal()],
                actions=["execute-api:Invoke"],
                resources=[f"execute-api:/*/{method}{path}" for method, path in public_routes],
            )
        ]
        if self.organization_id:
            in_org = {"aws:PrincipalOrgID": self.organization_id}
            statements += [
                # Cross-account callers need the resource policy's allow as well as their own.
                # Only other accounts': within the deployment's account an allow here would
                # be enough on its own, admitting every role without an execute-api policy.
                iam.PolicyStatement(
                    sid="OtherAccountsOfTheOrganisation",
                    principals=[iam.AnyPrincipal()],
                    actions=["execute-api:Invoke"],
                    resources=["execute-api:/*"],
                    conditions={
                        "StringEquals": in_org,
                        "StringNotEquals": {"aws:PrincipalAccount": Aws.ACCOUNT_ID},
                    },
                ),
                _deny_signed_invoke("DenyOutsideTheOrganisation", {"StringNotEquals": in_org}),
            ]
        else:
            statements.append(
                _deny_signed_invoke(
                    "DenyOtherAccounts",
                    {"StringNotEquals": {"aws:PrincipalAccount": Aws.ACCOUNT_ID}},
                )
            )
        if self.allowed_roles:
            statements.append(
                _deny_signed_invoke(
                    "DenyOtherPrincipalsThanTheAllowedRoles",
                    {"ArnNotLike": {"aws:PrincipalArn": self.role_arns()}},
                )
            )
        # The function compares an operator's role by name (a session's ARN has no path);
        # here the whole role ARN, path included, must be an admin role's. No admin roles:
        # no signed request reaches the operator routes at all.
        statements.append(
            _deny_signed_invoke(
                "DenyOperatorRoutesToOthersThanTheAdminRoles",
                {"ArnNotLike": {"aws:PrincipalArn": list(self.admin_roles)}}
                if self.admin_roles
                else {},
                resources=[OPERATOR_ROUTES],
            )
        )
        return iam.PolicyDocument(statements=statements)


def _require_roles_that_name_their_users(
    roles: tuple[str, ...], organization: object | None
) -> None:
    """A username is the caller's session name, and the first principal to use it claims it
    (docs/security.md, "Usernames can't be squatted"). Without allowed roles, anyone
    in the account who may assume some role could choose the session name `alice` before
    Alice signs in: refuse the synth. In an organisation, another account's administrators
    can create a role of any name outside the path Identity Center keeps: only permission
    sets' roles then."""
    if not roles:
        raise ValueError(
            f"{ALLOWED_ROLES_CONTEXT} is empty: every principal of the account could call, and "
            "a session of any role it may assume could name itself after another user and "
            "claim that username. List the roles whose session names an identity provider "
            "sets, e.g. aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevUsers_* "
            "(cdk.json's default)"
        )
    if organization is None:
        return
    outside = [role for role in roles if not role.startswith(IDENTITY_CENTER_PATH)]
    if outside:
        raise ValueError(
            f"{ALLOWED_ROLES_CONTEXT}: {', '.join(outside)} with {ORGANIZATION_CONTEXT}: "
            "another account's administrators could create a role of that name and choose "
            f"its session names; list Identity Center permission sets' roles "
            f"({IDENTITY_CENTER_PATH}AWSReservedSSO_<set>_*) only"
        )


def _deny_signed_invoke(
    sid: str,
    conditions: dict[str, Any],
    resources: tuple[str, ...] | list[str] = ("execute-api:/*",),
) -> iam.PolicyStatement:
    """Deny execute-api:Invoke on `resources` (every route by default) to signed requests
    (`aws:PrincipalAccount` present: the public routes stay public) that match `conditions`."""
    return iam.PolicyStatement(
        sid=sid,
        effect=iam.Effect.DENY,
        principals=[iam.AnyPrincipal()],
        actions=["execute-api:Invoke"],
        resources=list(resources),
        conditions={"Null": {"aws:PrincipalAccount": "false"}, **conditions},
    )


def _role_entries(scope: Construct, key: str) -> tuple[str, ...]:
    """A list (or comma-separated string) of `[path/]RoleName[*]` entries; a malformed one
    stops the synth, named."""
    raw = scope.node.try_get_context(key) or []
    entries = raw.split(",") if isinstance(raw, str) else list(raw)
    roles = tuple(str(e).strip().strip("/") for e in entries if str(e).strip())
    for role in roles:
        if not _ENTRY.match(role):
            raise ValueError(
                f"{key}: {role!r} is not [path/]RoleName[*], e.g. "
                "aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevUsers_*"
            )
    return roles


def _uncovered(allowed: tuple[str, ...], roles: dict[str, RolePattern]) -> list[str]:
    """The entries whose role no allowed pattern covers: the resource policy and the API
    function would refuse their sessions on every route. (Allowed roles are never empty
    here: `_require_roles_that_name_their_users` refused that first.)"""
    patterns = [RolePattern.parse(entry) for entry in allowed]
    return [
        entry
        for entry, role in roles.items()
        if not any(pattern.covers(role) for pattern in patterns)
    ]


def _require_profiling_roles_allowed(allowed: tuple[str, ...], profiling: tuple[str, ...]) -> None:
    """A profiling role outside the allowed roles could never call at all: stop the synth
    naming it, as for an admin role."""
    missing = _uncovered(allowed, {entry: RolePattern.parse(entry) for entry in profiling})
    if missing:
        raise ValueError(
            f"{PROFILING_ROLES_CONTEXT}: {', '.join(missing)} not allowed by "
            f"{ALLOWED_ROLES_CONTEXT}, so the API would refuse its sessions on every route; "
            f"add it to {ALLOWED_ROLES_CONTEXT}"
        )


def _admin_roles(scope: Construct) -> tuple[str, ...]:
    """`gpudev:adminRoles`: a list (or comma-separated string) of IAM role ARNs."""
    raw = scope.node.try_get_context(ADMIN_ROLES_CONTEXT) or []
    entries = raw.split(",") if isinstance(raw, str) else list(raw)
    roles = tuple(str(e).strip() for e in entries if str(e).strip())
    for role in roles:
        if not _ADMIN_ROLE_ARN.match(role):
            raise ValueError(
                f"{ADMIN_ROLES_CONTEXT}: {role!r} is not an IAM role ARN, e.g. "
                "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/"
                "AWSReservedSSO_GpuDevAdmins_*"
            )
    return roles


def _require_admin_roles_allowed(allowed: tuple[str, ...], admins: tuple[str, ...]) -> None:
    """The resource policy and the API function refuse every other role than the allowed
    ones' sessions on every route, the operator routes included: an admin role missing
    from them would be refused without a word. Stop the synth naming the entry to add
    rather than admit it implicitly: `gpudev:allowedRoles` stays the one list of who may
    call, and an admin role in it may use every route, which is the operator's choice.
    (The role ARN's account is checked by the account and organisation statements.)"""
    missing = _uncovered(allowed, {admin: AdminRole.parse(admin).role for admin in admins})
    if missing:
        entries = ", ".join(str(AdminRole.parse(admin).role) for admin in missing)
        raise ValueError(
            f"{ADMIN_ROLES_CONTEXT}: {', '.join(missing)} not allowed by "
            f"{ALLOWED_ROLES_CONTEXT}, so the API would refuse its sessions on every route, "
            f"the operator routes included; add {entries} to {ALLOWED_ROLES_CONTEXT}"
        )
