from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Match, Template

from cdk_app.layer_bundling import migrations_digest
from cdk_app.nag import ACKNOWLEDGED
from tests.support.templates import cfn_lint


def test_database_is_aurora_postgresql_17_serverless_v2_with_a_managed_secret(
    template: Template,
):
    template.has_resource_properties(
        "AWS::RDS::DBCluster",
        {
            "Engine": "aurora-postgresql",
            "EngineVersion": Match.string_like_regexp(r"^17\."),
            "StorageEncrypted": True,
            "DeletionProtection": True,
            "ServerlessV2ScalingConfiguration": {"MinCapacity": 0.5, "MaxCapacity": 8},
            "DatabaseName": "gpudev",
        },
    )
    template.has_resource_properties("AWS::RDS::DBInstance", {"DBInstanceClass": "db.serverless"})
    template.resource_count_is("AWS::SecretsManager::Secret", 1)


def test_database_is_reachable_only_from_the_functions_security_group(template: Template):
    ingress = template.find_resources("AWS::EC2::SecurityGroupIngress")
    assert len(ingress) == 1
    (rule,) = ingress.values()
    assert "SourceSecurityGroupId" in rule["Properties"]
    assert "CidrIp" not in rule["Properties"]


def test_migration_function_runs_on_deploy_and_reruns_when_migrations_change(
    template: Template,
):
    functions = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"MIGRATIONS_SHA256": Match.any_value()}}}},
    )
    assert len(functions) == 1
    ((_migrate_id, migrate),) = functions.items()
    props = migrate["Properties"]
    assert props["Runtime"] == "python3.12"
    assert props["Architectures"] == ["arm64"]
    assert props["Handler"] == "handler.handler"
    assert props["TracingConfig"] == {"Mode": "Active"}
    assert props["Environment"]["Variables"]["MIGRATIONS_SHA256"] == migrations_digest()
    assert "DB_SECRET_ARN" in props["Environment"]["Variables"]
    assert "VpcConfig" in props
    triggers = template.find_resources("Custom::Trigger")
    assert len(triggers) == 1


def test_every_other_function_is_created_or_updated_after_the_migrations_ran(
    template: Template,
):
    """New code may read a column or call a SQL function only its migration adds."""
    ((trigger_id, _),) = template.find_resources("Custom::Trigger").items()
    functions = template.find_resources("AWS::Lambda::Function")
    migrate = {
        fid
        for fid, f in functions.items()
        if "MIGRATIONS_SHA256" in f["Properties"].get("Environment", {}).get("Variables", {})
    }
    ours = {
        fid: f
        for fid, f in functions.items()
        if fid not in migrate and "DB_" in json.dumps(f["Properties"].get("Environment", {}))
    }
    assert len(ours) >= 8
    late = sorted(fid for fid, f in ours.items() if trigger_id not in f.get("DependsOn", []))
    assert late == []


def test_layer_is_built_without_docker_and_carries_the_package_its_files_and_migrations(
    synthesized: tuple[Any, Path],
):
    _, outdir = synthesized
    assets = json.loads((outdir / "GpuDev.assets.json").read_text())["files"]
    layer_dirs = [
        outdir / a["source"]["path"]
        for a in assets.values()
        if (outdir / a["source"]["path"] / "python" / "gpudev").is_dir()
    ]
    assert len(layer_dirs) == 1
    layer = layer_dirs[0]
    assert (layer / "python" / "gpudev" / "sql" / "users" / "bind_principal.sql").is_file()
    # Files the package reads at run time ship with it: the pod's startup script.
    startup = Path("python", "gpudev", "cluster", "startup.sh")
    source = Path(__file__).parents[2] / "layers" / "gpudev" / startup
    assert (layer / startup).read_text() == source.read_text()
    assert sorted(p.name for p in (layer / "migrations").glob("*.sql")) == sorted(
        p.name for p in (Path(__file__).parents[2] / "migrations").glob("*.sql")
    )
    # Wheels for Lambda's arm64 Python 3.12, not for this machine.
    assert list((layer / "python" / "psycopg_binary").glob("_psycopg.cpython-312-aarch64*.so"))
    assert not (layer / "python" / "kubernetes" / "aio").exists()


def test_every_acknowledged_nag_finding_has_a_reason():
    assert ACKNOWLEDGED
    assert all(len(reason) > 40 for reason in ACKNOWLEDGED.values())


def test_cdk_nag_reports_no_unacknowledged_finding(synthesized: tuple[Any, Path]):
    _, outdir = synthesized
    report = json.loads((outdir / "validation-report.json").read_text())
    failures = [
        violation
        for plugin in report.get("pluginReports", [])
        for violation in plugin.get("violations", [])
    ]
    assert [p["pluginName"] for p in report["pluginReports"]] == ["AwsSolutions"]
    assert failures == []
    assert report["pluginReports"][0]["conclusion"] == "success"


def test_cfn_lint_accepts_the_synthesized_template(synthesized: tuple[Any, Path]):
    _, outdir = synthesized
    result = cfn_lint(outdir / "GpuDev.template.json")
    assert result.returncode == 0, result.stdout + result.stderr
