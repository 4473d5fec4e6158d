"""How functions reach Aurora: IAM database authentication as their group's login role,
`rds-db:connect` for exactly that user, the master secret for the migrations only, and the
RDS CA bundle in the layer for verify-full TLS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from cdk_app.ca_bundle import RdsCaBundleMissing, rds_ca_bundle
from cdk_app.declaration import DEPLOYMENT, MIGRATE
from cdk_app.layer_bundling import LAYER_CA_BUNDLE


def _function(template: Template, deployed_name: str) -> tuple[str, dict[str, Any]]:
    functions = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"POWERTOOLS_SERVICE_NAME": deployed_name}}}},
    )
    ((logical_id, function),) = functions.items()
    return logical_id, function


def _statements(template: Template, function: dict[str, Any]) -> list[dict[str, Any]]:
    role_id = function["Properties"]["Role"]["Fn::GetAtt"][0]
    policies = template.find_resources("AWS::IAM::Policy")
    return [
        statement
        for policy in policies.values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)


def test_the_cluster_accepts_iam_database_authentication(template: Template):
    template.has_resource_properties(
        "AWS::RDS::DBCluster", {"EnableIAMDatabaseAuthentication": True}
    )


DATABASE_FUNCTIONS = [
    spec for spec in DEPLOYMENT.functions if spec.uses_database and spec.name != MIGRATE.name
]


@pytest.mark.parametrize("spec", DATABASE_FUNCTIONS, ids=lambda spec: spec.name)
def test_each_function_may_connect_only_as_its_groups_login_role_and_reads_no_secret(
    template: Template, spec: Any
):
    _, function = _function(template, spec.deployed_name)
    variables = function["Properties"]["Environment"]["Variables"]
    login = f"{spec.database.role}_login"
    assert variables["DB_IAM_USER"] == login
    assert "DB_SECRET_ARN" not in variables
    statements = _statements(template, function)
    connects = [s for s in statements if "rds-db:connect" in _actions(s)]
    assert len(connects) == 1
    resource = json.dumps(connects[0]["Resource"])
    assert f"/{login}" in resource and ":dbuser:" in resource and "*" not in resource
    assert not any("secretsmanager:GetSecretValue" in _actions(s) for s in statements)


def test_only_the_migration_function_reads_the_master_secret_and_it_has_no_login_role(
    template: Template,
):
    _, function = _function(template, MIGRATE.deployed_name)
    variables = function["Properties"]["Environment"]["Variables"]
    assert "DB_SECRET_ARN" in variables and "DB_IAM_USER" not in variables
    assert (variables["DB_STATEMENT_TIMEOUT_MS"], variables["DB_LOCK_TIMEOUT_MS"]) == ("0", "0")
    statements = _statements(template, function)
    assert any("secretsmanager:GetSecretValue" in _actions(s) for s in statements)
    assert not any("rds-db:connect" in _actions(s) for s in statements)


def test_the_groups_are_the_roles_the_migration_creates():
    migrations = "".join(
        (Path(__file__).parents[2] / "migrations" / name).read_text()
        for name in ("0006_function_roles.sql", "0017_disk_listing_and_purge_role.sql")
    )
    roles = {spec.database.role for spec in DATABASE_FUNCTIONS if spec.database}
    assert roles == {"gpudev_api", "gpudev_lifecycle", "gpudev_reconcilers", "gpudev_purge"}
    assert all(f"'{role}'" in migrations for role in roles)


def test_the_layer_ships_the_rds_ca_bundle_where_the_functions_look_for_it(
    synthesized: tuple[Any, Path],
):
    from gpudev.settings import DatabaseSettings

    _, outdir = synthesized
    assets = json.loads((outdir / "GpuDev.assets.json").read_text())["files"]
    (layer,) = [
        outdir / a["source"]["path"]
        for a in assets.values()
        if (outdir / a["source"]["path"] / "python" / "gpudev").is_dir()
    ]
    assert b"-----BEGIN CERTIFICATE-----" in (layer / LAYER_CA_BUNDLE).read_bytes()
    # Lambda mounts the layer at /opt
    assert DatabaseSettings(database_url="x").db_ssl_root_cert == f"/opt/{LAYER_CA_BUNDLE}"


def test_a_missing_ca_bundle_fails_the_build_saying_how_to_fetch_it(tmp_path: Path):
    with pytest.raises(RdsCaBundleMissing, match=r"curl -fsSL https://truststore\.pki\.rds"):
        rds_ca_bundle(tmp_path / "rds-global-bundle.pem")
    not_pem = tmp_path / "empty.pem"
    not_pem.write_text("")
    with pytest.raises(RdsCaBundleMissing, match="not a PEM certificate bundle"):
        rds_ca_bundle(not_pem)


@pytest.mark.parametrize(
    "spec", [s for s in DEPLOYMENT.functions if s.uses_database], ids=lambda spec: spec.name
)
def test_each_function_that_uses_the_database_is_capped_as_declared(template: Template, spec: Any):
    """Reserved concurrency on the function, or the maximum concurrency of the SQS event
    source that invokes it (docs/operator-guide.md "Database connections")."""
    logical_id, function = _function(template, spec.deployed_name)
    reserved = function["Properties"].get("ReservedConcurrentExecutions")
    assert reserved == spec.reserved_concurrency
    mappings = template.find_resources(
        "AWS::Lambda::EventSourceMapping", {"Properties": {"FunctionName": {"Ref": logical_id}}}
    )
    scaling = [m["Properties"].get("ScalingConfig", {}) for m in mappings.values()]
    caps = [reserved] + [s.get("MaximumConcurrency") for s in scaling]
    assert min(c for c in caps if c is not None) == DEPLOYMENT.concurrency_cap(spec.name)
