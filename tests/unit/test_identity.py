import pytest

from gpudev.identity import (
    AdminRole,
    NotAuthorized,
    RolePattern,
    caller_from_arn,
    parse_role_patterns,
    require_account,
    require_admin,
    require_allowed_role,
    require_bound,
    require_profiling_role,
)


@pytest.mark.parametrize(
    ("arn", "username", "role"),
    [
        ("arn:aws:iam::123456789012:user/alice", "alice", None),
        ("arn:aws:iam::123456789012:user/team/ml/bob", "bob", None),
        (
            "arn:aws:sts::123456789012:assumed-role/SSOCloudDevGpuReservation/carol@meta.com",
            "carol@meta.com",
            "SSOCloudDevGpuReservation",
        ),
    ],
)
def test_username_is_the_session_or_user_name(arn: str, username: str, role: str | None):
    caller = caller_from_arn(arn)
    assert (caller.username, caller.role_name, caller.account_id) == (
        username,
        role,
        "123456789012",
    )


@pytest.mark.parametrize(
    "arn",
    [
        "",
        "arn:aws:iam::123456789012:role/SomeRole",
        "arn:aws:s3:::bucket",
        "arn:aws:sts::123456789012:assumed-role/Role/has space",
        # malformed
        "arn:aws:iam::123456789012:assumed-role/Role/alice",  # sessions are sts
        "arn:aws:sts::123456789012:user/alice",  # users are iam
        "arn:aws:sts::123456789012:assumed-role/Role",  # no session
        "arn:aws:iam::123456789012:user//alice",
    ],
)
def test_unsupported_or_malformed_principals_are_refused(arn: str):
    with pytest.raises(NotAuthorized):
        caller_from_arn(arn)


ACCOUNT = "123456789012"


def test_allowed_roles_restrict_callers():
    sso = caller_from_arn("arn:aws:sts::123456789012:assumed-role/GpuDevUsers/dana")
    iam_user = caller_from_arn("arn:aws:iam::123456789012:user/alice")
    require_allowed_role(sso, parse_role_patterns("GpuDevUsers"), ACCOUNT)
    require_allowed_role(iam_user, (), ACCOUNT)
    with pytest.raises(NotAuthorized, match="GpuDevUsers"):
        require_allowed_role(iam_user, parse_role_patterns("GpuDevUsers"), ACCOUNT)


def test_without_allowed_roles_a_session_of_a_role_that_names_itself_claims_no_username():
    """The squatting scenario: anyone who may assume some role picks the session name
    `alice` and calls before Alice does. Refused, so Alice's name (and the disks tagged with
    it) can never be bound to that session."""
    squatter = caller_from_arn("arn:aws:sts::123456789012:assumed-role/AnyRole/alice")
    with pytest.raises(NotAuthorized, match="choose their own session name") as refused:
        require_allowed_role(squatter, (), ACCOUNT)
    assert "gpudev:allowedRoles" in str(refused.value)
    assert squatter.principal_arn in str(refused.value)


@pytest.mark.parametrize(
    ("arn", "admitted"),
    [
        ("arn:aws:iam::123456789012:user/alice", True),
        ("arn:aws:iam::123456789012:user/contractors/alice", True),
        ("arn:aws:iam::210987654321:user/alice", False),  # another account names it
        (
            "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_GpuDevUsers_0123abcd4567ef89"
            "/alice@example.com",
            True,
        ),
        ("arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_GpuDevUsers_/alice", False),
        ("arn:aws:sts::123456789012:assumed-role/AWSReservedSSO__0123abcd4567ef89/alice", False),
        ("arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_X_0123ABCD4567EF89/alice", False),
        ("arn:aws:sts::123456789012:assumed-role/GpuDevUsers/alice", False),
    ],
)
def test_without_allowed_roles_only_iam_users_of_the_account_and_sso_sessions_are_admitted(
    arn: str, admitted: bool
):
    caller = caller_from_arn(arn)
    if admitted:
        require_allowed_role(caller, (), ACCOUNT)
    else:
        with pytest.raises(NotAuthorized):
            require_allowed_role(caller, (), ACCOUNT)


SSO_ROLE = "aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevUsers_*"


@pytest.mark.parametrize(
    ("entries", "role", "allowed"),
    [
        (SSO_ROLE, "AWSReservedSSO_GpuDevUsers_0123abcd4567ef89", True),
        # Identity Center's suffix is exactly 16 hex digits: another permission set whose
        # name starts the same (GpuDevUsers_ReadOnly) is not admitted by the prefix.
        (SSO_ROLE, "AWSReservedSSO_GpuDevUsers_", False),
        (SSO_ROLE, "AWSReservedSSO_GpuDevUsers_ReadOnly_0123abcd4567ef89", False),
        (SSO_ROLE, "AWSReservedSSO_GpuDevUsers_0123ABCD4567EF89", False),
        ("Ops*", "Ops_anything", True),  # a prefix outside Identity Center stays a prefix
        # every permission set's roles: the prefix names no set, so no hash rule
        (
            "aws-reserved/sso.amazonaws.com/AWSReservedSSO_*",
            "AWSReservedSSO_GpuDevUsers_0123abcd4567ef89",
            True,
        ),
        (SSO_ROLE, "AWSReservedSSO_GpuDevAdmins_0123abcd4567ef89", False),
        (SSO_ROLE, "XAWSReservedSSO_GpuDevUsers_0123", False),
        (
            "/aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevUsers_abcd",
            "AWSReservedSSO_GpuDevUsers_abcd",
            True,
        ),
        (
            "aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevUsers_abcd",
            "AWSReservedSSO_GpuDevUsers_abcde",
            False,
        ),
        ("GpuDevUsers, teams/ml/Researchers", "Researchers", True),
        ("GpuDevUsers, teams/ml/Researchers", "ml", False),
        ("GpuDevUsers", "gpudevusers", False),
    ],
)
def test_allowed_roles_match_the_role_name_against_each_entrys_last_segment(
    entries: str, role: str, allowed: bool
):
    caller = caller_from_arn(f"arn:aws:sts::123456789012:assumed-role/{role}/dana")
    if allowed:
        require_allowed_role(caller, parse_role_patterns(entries), ACCOUNT)
    else:
        with pytest.raises(NotAuthorized, match="gpu-dev accepts sessions of the roles"):
            require_allowed_role(caller, parse_role_patterns(entries), ACCOUNT)


def test_a_role_pattern_keeps_its_path_in_iam_form():
    pattern = RolePattern.parse(SSO_ROLE)
    assert (pattern.path, pattern.name, pattern.prefix) == (
        "/aws-reserved/sso.amazonaws.com/",
        "AWSReservedSSO_GpuDevUsers_",
        True,
    )
    assert str(pattern) == SSO_ROLE
    assert RolePattern.parse("GpuDevUsers").path == "/"


@pytest.mark.parametrize(
    "entry", ["*", "aws-reserved/*", "aws-reserved/*/GpuDev", "Gpu*Dev", "a/b/has space", "/"]
)
def test_a_malformed_role_pattern_is_refused_with_the_expected_form(entry: str):
    with pytest.raises(ValueError, match=r"\[path/\]RoleName"):
        RolePattern.parse(entry)


@pytest.mark.parametrize(
    ("arn", "canonical"),
    [
        (
            "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_GpuDevUsers_abcd/carol@example.com",
            "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_GpuDevUsers_abcd/carol@example.com",
        ),
        (
            "arn:aws:iam::123456789012:user/contractors/alice",
            "arn:aws:iam::123456789012:user/contractors/alice",
        ),
        ("arn:aws:iam::123456789012:user/alice", "arn:aws:iam::123456789012:user/alice"),
    ],
)
def test_the_canonical_principal_keeps_account_kind_role_or_path_and_session(
    arn: str, canonical: str
):
    assert caller_from_arn(arn).principal_arn == canonical


def test_the_same_username_from_another_principal_is_refused_without_naming_the_owner():
    owner = caller_from_arn("arn:aws:iam::123456789012:user/alice")
    for other in [
        "arn:aws:sts::123456789012:assumed-role/AnyRole/alice",
        "arn:aws:iam::123456789012:user/contractors/alice",
        "arn:aws:sts::111111111111:assumed-role/AnyRole/alice",
    ]:
        impostor = caller_from_arn(other)
        assert impostor.username == owner.username
        with pytest.raises(NotAuthorized) as refused:
            require_bound(impostor, owner.principal_arn)
        assert refused.value.message.startswith(
            f"the username alice belongs to another principal; you called as {other}."
        )
        assert owner.principal_arn not in refused.value.message
    require_bound(owner, owner.principal_arn)
    require_bound(owner, None)  # not bound yet: the first call binds it


def test_only_the_deployment_account_or_its_organisation_may_call():
    ours = caller_from_arn("arn:aws:iam::123456789012:user/alice")
    theirs = caller_from_arn("arn:aws:sts::111111111111:assumed-role/R/alice", "o-abcdefghij")
    require_account(ours, "123456789012")
    with pytest.raises(NotAuthorized, match="accepts principals of account 123456789012;"):
        require_account(theirs, "123456789012")
    require_account(theirs, "123456789012", "o-abcdefghij")
    with pytest.raises(NotAuthorized, match="or organisation o-zzzzzzzzzz"):
        require_account(theirs, "123456789012", "o-zzzzzzzzzz")


ADMINS = (
    "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevAdmins_*"
)


@pytest.mark.parametrize(
    ("arn", "admin"),
    [
        (
            "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_GpuDevAdmins_0123abcd4567ef89/o",
            True,
        ),
        # another permission set sharing the prefix, another account, an IAM user, a role
        # that is not Identity Center's
        (
            "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_GpuDevAdmins_ReadOnly_0123abcd4567ef89/o",
            False,
        ),
        (
            "arn:aws:sts::210987654321:assumed-role/AWSReservedSSO_GpuDevAdmins_0123abcd4567ef89/o",
            False,
        ),
        ("arn:aws:iam::123456789012:user/AWSReservedSSO_GpuDevAdmins_0123abcd4567ef89", False),
        ("arn:aws:sts::123456789012:assumed-role/GpuDevAdmins/o", False),
    ],
)
def test_an_operator_is_a_session_of_an_admin_role_of_the_account(arn: str, admin: bool):
    admins = (AdminRole.parse(ADMINS),)
    if admin:
        require_admin(caller_from_arn(arn), admins)
    else:
        with pytest.raises(NotAuthorized, match="this is an operator route"):
            require_admin(caller_from_arn(arn), admins)


@pytest.mark.parametrize(
    "entry", ["GpuDevAdmins", "arn:aws:iam::123456789012:user/ops", "arn:aws:iam::12345:role/x"]
)
def test_a_malformed_admin_role_is_refused(entry: str):
    with pytest.raises(ValueError, match="expected an IAM role ARN"):
        AdminRole.parse(entry)


PROFILERS = "aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevProfilers_*"
SESSION = "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_"


@pytest.mark.parametrize(
    ("arn", "allowed"),
    [
        (f"{SESSION}GpuDevProfilers_0123abcd4567ef89/o", True),
        (f"{SESSION}GpuDevUsers_0123abcd4567ef89/o", False),
        ("arn:aws:iam::123456789012:user/AWSReservedSSO_GpuDevProfilers_0123abcd4567ef89", False),
    ],
)
def test_profiling_is_for_sessions_of_the_profiling_roles_only(arn: str, allowed: bool):
    patterns = parse_role_patterns(PROFILERS)
    if allowed:
        require_profiling_role(caller_from_arn(arn), patterns)
        return
    with pytest.raises(NotAuthorized) as refused:
        require_profiling_role(caller_from_arn(arn), patterns)
    assert f"gpudev:profilingRoles ({PROFILERS})" in refused.value.message
    assert arn in refused.value.message and refused.value.field == "profiling"


def test_no_profiling_roles_means_nobody_may_profile():
    caller = caller_from_arn("arn:aws:sts::123456789012:assumed-role/Anything/o")
    names_none = "gpudev:profilingRoles, and this deployment names none"
    with pytest.raises(NotAuthorized, match=names_none):
        require_profiling_role(caller, ())
