"""Who may invoke the REST API: the deployment's account (or organisation) by resource
policy, public paths for anyone, and ALLOWED_ROLES from CDK context, path included."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from tests.support.certificates import synth_context

SSO_ROLE = "aws-reserved/sso.amazonaws.com/AWSReservedSSO_GpuDevUsers_*"
OPS_ROLE = "aws-reserved/sso.amazonaws.com/AWSReservedSSO_Ops_*"
ADMIN_ROLE = f"arn:aws:iam::123456789012:role/{OPS_ROLE}"
OTHER_ADMIN_ROLE = f"arn:aws:iam::210987654321:role/{OPS_ROLE}"


def _policy(template: Template) -> dict[str, Any]:
    ((_, api),) = template.find_resources("AWS::ApiGateway::RestApi").items()
    return api["Properties"]["Policy"]


def _statements(template: Template) -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in _policy(template)["Statement"]}


def _api_environment(template: Template) -> dict[str, Any]:
    functions = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"POWERTOOLS_SERVICE_NAME": "gpudev-api"}}}},
    )
    ((_, api),) = functions.items()
    return api["Properties"]["Environment"]["Variables"]


def test_the_api_admits_only_the_deployments_account_and_health_stays_public(
    template: Template,
):
    statements = _statements(template)
    assert set(statements) == {
        "PublicPaths",
        "DenyOtherAccounts",
        "DenyOtherPrincipalsThanTheAllowedRoles",  # cdk.json's permission set
        "DenyOperatorRoutesToOthersThanTheAdminRoles",
    }
    # no admin roles in context: no signed request reaches the operator routes
    assert statements["DenyOperatorRoutesToOthersThanTheAdminRoles"]["Condition"] == {
        "Null": {"aws:PrincipalAccount": "false"}
    }
    public = statements["PublicPaths"]
    assert (public["Effect"], public["Principal"]) == ("Allow", {"AWS": "*"})
    assert public["Resource"] == "execute-api:/*/GET/health"
    deny = statements["DenyOtherAccounts"]
    assert (deny["Effect"], deny["Action"], deny["Resource"]) == (
        "Deny",
        "execute-api:Invoke",
        "execute-api:/*",
    )
    assert deny["Condition"] == {
        "Null": {"aws:PrincipalAccount": "false"},
        "StringNotEquals": {"aws:PrincipalAccount": {"Ref": "AWS::AccountId"}},
    }


def test_the_api_function_knows_its_account_and_admits_cdk_jsons_permission_set_by_default(
    template: Template,
):
    environment = _api_environment(template)
    assert environment["DEPLOYMENT_ACCOUNT_ID"] == {"Ref": "AWS::AccountId"}
    assert environment["ALLOWED_ROLES"] == SSO_ROLE
    assert environment["ADMIN_ROLES"] == ""  # nobody is an operator unless context says so
    assert environment["PROFILING_ROLES"] == ""  # nobody may profile unless context says so
    assert "ORGANIZATION_ID" not in environment


@pytest.fixture(scope="module")
def with_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Template]:
    """A second synth with allowed roles and an organisation from CDK context."""
    from cdk_app.app import build_app

    outdir: Path = tmp_path_factory.mktemp("cdk.out.access")
    app, stack = build_app(
        outdir=str(outdir),
        context={
            **synth_context(tmp_path_factory.mktemp("certs")),
            "gpudev:allowedRoles": [SSO_ROLE, f"/{OPS_ROLE}"],
            "gpudev:organizationId": "o-abcdefghij",
            "gpudev:adminRoles": [ADMIN_ROLE, OTHER_ADMIN_ROLE],
            "gpudev:profilingRoles": [OPS_ROLE],
        },
    )
    app.synth()
    yield Template.from_stack(stack)


def test_allowed_roles_and_the_organisation_come_from_cdk_context(with_context: Template):
    environment = _api_environment(with_context)
    assert environment["ALLOWED_ROLES"] == f"{SSO_ROLE},{OPS_ROLE}"
    assert environment["ORGANIZATION_ID"] == "o-abcdefghij"
    assert environment["ADMIN_ROLES"] == f"{ADMIN_ROLE},{OTHER_ADMIN_ROLE}"
    assert environment["PROFILING_ROLES"] == OPS_ROLE
    statements = _statements(with_context)
    assert set(statements) == {
        "PublicPaths",
        "OtherAccountsOfTheOrganisation",
        "DenyOutsideTheOrganisation",
        "DenyOtherPrincipalsThanTheAllowedRoles",
        "DenyOperatorRoutesToOthersThanTheAdminRoles",
    }
    operators = statements["DenyOperatorRoutesToOthersThanTheAdminRoles"]
    assert operators["Effect"] == "Deny" and operators["Resource"] == "execute-api:/*/*/v1/admin/*"
    assert operators["Condition"]["ArnNotLike"]["aws:PrincipalArn"] == [
        ADMIN_ROLE,
        OTHER_ADMIN_ROLE,
    ]
    # an allow for other accounts only: within the account, IAM policies still decide
    assert statements["OtherAccountsOfTheOrganisation"]["Condition"] == {
        "StringEquals": {"aws:PrincipalOrgID": "o-abcdefghij"},
        "StringNotEquals": {"aws:PrincipalAccount": {"Ref": "AWS::AccountId"}},
    }
    assert statements["DenyOutsideTheOrganisation"]["Condition"]["StringNotEquals"] == {
        "aws:PrincipalOrgID": "o-abcdefghij"
    }
    roles = statements["DenyOtherPrincipalsThanTheAllowedRoles"]
    assert roles["Effect"] == "Deny"
    assert roles["Condition"]["Null"] == {"aws:PrincipalAccount": "false"}
    arns = roles["Condition"]["ArnNotLike"]["aws:PrincipalArn"]
    assert arns == [
        {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":iam::*:role/{role}"]]}
        for role in (SSO_ROLE, OPS_ROLE)
    ]


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"gpudev:allowedRoles": "aws-reserved/*/X"}, "is not \\[path/\\]RoleName"),
        ({"gpudev:organizationId": "org-1"}, "is not o-xxxxxxxxxx"),
        ({"gpudev:adminRoles": ["GpuDevAdmins"]}, "is not an IAM role ARN"),
        ({"gpudev:adminRoles": "arn:aws:iam::123456789012:user/ops"}, "is not an IAM role ARN"),
        (
            {"gpudev:profilingRoles": "GpuDevUsers,aws-reserved/*/X"},
            "^gpudev:profilingRoles: 'aws-reserved/\\*/X' is not \\[path/\\]RoleName",
        ),
        ({"gpudev:profilingRoles": ["arn:aws:iam::1:role/X"]}, "^gpudev:profilingRoles: "),
    ],
)
def test_malformed_access_context_fails_the_synth_with_the_expected_form(
    context: dict[str, Any], message: str
):
    import aws_cdk as cdk

    from cdk_app.access import ApiAccess

    app = cdk.App(context={"gpudev:allowedRoles": SSO_ROLE, **context})
    with pytest.raises(ValueError, match=message):
        ApiAccess.from_context(app)


@pytest.mark.parametrize("allowed", [[], "", [" "]])
def test_no_allowed_roles_stops_the_synth_saying_why(allowed: Any):
    """Without allowed roles a session of any role the account lets someone assume could
    name itself `alice` and claim Alice's username before she signs in."""
    import aws_cdk as cdk

    from cdk_app.access import ApiAccess

    with pytest.raises(ValueError, match="gpudev:allowedRoles is empty") as raised:
        ApiAccess.from_context(cdk.App(context={"gpudev:allowedRoles": allowed}))
    assert "claim that username" in str(raised.value)


def test_in_an_organisation_only_identity_center_roles_may_be_allowed():
    """Another account's administrators could create a role named like an allowed one and
    choose its session names."""
    import aws_cdk as cdk

    from cdk_app.access import ApiAccess

    context = {
        "gpudev:allowedRoles": [SSO_ROLE, "GpuDevUsers"],
        "gpudev:organizationId": "o-abcdefghij",
    }
    with pytest.raises(ValueError, match="GpuDevUsers with gpudev:organizationId"):
        ApiAccess.from_context(cdk.App(context=context))


SSO = "aws-reserved/sso.amazonaws.com/AWSReservedSSO_"
ADMIN_ARN = "arn:aws:iam::123456789012:role/"


@pytest.mark.parametrize(
    ("allowed", "admin"),
    [
        (["Ops"], "Ops"),
        (["Ops*"], "Ops"),
        (["Ops*"], "OpsOnCall*"),  # a prefix within the allowed prefix
        ([f"{SSO}GpuDevUsers_*"], f"{SSO}GpuDevUsers_*"),
        ([f"{SSO}GpuDevUsers_*"], f"{SSO}GpuDevUsers_0123456789abcdef"),
        ([f"{SSO}*"], f"{SSO}GpuDevAdmins_*"),  # every permission set's roles
    ],
)
def test_an_admin_role_the_allowed_roles_admit_synthesizes(allowed: list[str], admin: str):
    import aws_cdk as cdk

    from cdk_app.access import ApiAccess

    context = {"gpudev:allowedRoles": allowed, "gpudev:adminRoles": [ADMIN_ARN + admin]}
    assert ApiAccess.from_context(cdk.App(context=context)).admin_roles == (ADMIN_ARN + admin,)


@pytest.mark.parametrize(
    ("allowed", "admin", "entry"),
    [
        (["GpuDevUsers"], "Ops", "Ops"),
        (["Ops"], "Ops*", "Ops\\*"),  # every Ops… role is more than the one Ops
        (["ops/Ops"], "Ops", "Ops"),  # another path: the resource policy compares it
        (["Ops"], "ops/Ops", "ops/Ops"),
        # a permission set's prefix admits its own hash only, not another set's roles
        ([f"{SSO}GpuDevUsers_*"], f"{SSO}GpuDevUsers_Ops_*", f"{SSO}GpuDevUsers_Ops_\\*"),
    ],
)
def test_an_admin_role_outside_the_allowed_roles_stops_the_synth_naming_it(
    allowed: list[str], admin: str, entry: str
):
    """Without the check the API's resource policy and function refuse the operator's
    sessions on every route, with API Gateway's explicit deny as the only word."""
    import aws_cdk as cdk

    from cdk_app.access import ApiAccess

    context = {"gpudev:allowedRoles": allowed, "gpudev:adminRoles": [ADMIN_ARN + admin]}
    with pytest.raises(ValueError) as raised:
        ApiAccess.from_context(cdk.App(context=context))
    assert str(raised.value).startswith(f"gpudev:adminRoles: {ADMIN_ARN}{admin} not allowed by")
    assert re.search(f"add {entry} to gpudev:allowedRoles$", str(raised.value))


def test_a_profiling_role_outside_the_allowed_roles_stops_the_synth_naming_it():
    import aws_cdk as cdk

    from cdk_app.access import ApiAccess

    context = {"gpudev:allowedRoles": ["GpuDevUsers"], "gpudev:profilingRoles": "Perf"}
    refusal = r"^gpudev:profilingRoles: Perf not allowed by gpudev:allowedRoles"
    with pytest.raises(ValueError, match=refusal):
        ApiAccess.from_context(cdk.App(context=context))
    context["gpudev:profilingRoles"] = "GpuDevUsers"
    assert ApiAccess.from_context(cdk.App(context=context)).profiling_roles == ("GpuDevUsers",)
