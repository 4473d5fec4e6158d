import pytest

from gpudev.identity import NotAuthorized, caller_from_arn, require_allowed_role


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
    ],
)
def test_unsupported_principals_are_refused_with_a_reason(arn: str):
    with pytest.raises(NotAuthorized):
        caller_from_arn(arn)


def test_allowed_roles_restrict_callers():
    sso = caller_from_arn("arn:aws:sts::123456789012:assumed-role/GpuDevUsers/dana")
    iam_user = caller_from_arn("arn:aws:iam::123456789012:user/alice")
    require_allowed_role(sso, frozenset({"GpuDevUsers"}))
    require_allowed_role(iam_user, frozenset())
    with pytest.raises(NotAuthorized, match="GpuDevUsers"):
        require_allowed_role(iam_user, frozenset({"GpuDevUsers"}))
