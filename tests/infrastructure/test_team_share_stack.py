"""The team share in CDK (cdk_app/team_share.py, docs/shared-files.md "The team share"):
with gpudev:teamShare at ro or rw the cluster stack makes the team's one access point
(rooted at /team, owned by dev) and hands its id to the main stack, whose functions get the
mode and the id; off, there is none. The API may read the metered size of the deployment's
file system only. Both synths are cdk-nag clean (a finding fails them); a bad value stops
the synth with a sentence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template

from cdk_app.declaration import SHARED_FILE_SYSTEM_ID, TEAM_SHARE, TEAM_SHARE_ACCESS_POINT
from tests.infrastructure.test_cluster_stack import CONTEXT, _cluster_template

FILE_SYSTEM = "fs-0123456789abcdef0"
TEAM = "fsap-0123456789abcdef1"


@pytest.fixture(scope="module")
def cluster_with_team() -> Template:
    return _cluster_template({**CONTEXT, TEAM_SHARE.context_key: "ro"})


def _main(tmp: pytest.TempPathFactory, context: dict[str, Any]) -> Template:
    from cdk_app.app import build_app
    from tests.support.certificates import synth_context

    outdir = tmp.mktemp("cdk.out")
    app, stack = build_app(
        outdir=str(outdir), context={**synth_context(tmp.mktemp("certs")), **context}
    )
    app.synth()
    report = json.loads((Path(outdir) / "validation-report.json").read_text())
    assert [v for p in report["pluginReports"] for v in p.get("violations", [])] == []
    return Template.from_stack(stack)


@pytest.fixture(scope="module")
def main_with_team(tmp_path_factory: pytest.TempPathFactory) -> Template:
    return _main(
        tmp_path_factory,
        {
            SHARED_FILE_SYSTEM_ID.context_key: FILE_SYSTEM,
            TEAM_SHARE.context_key: "rw",
            TEAM_SHARE_ACCESS_POINT.context_key: TEAM,
        },
    )


def test_the_cluster_stack_makes_the_team_access_point_rooted_at_team_as_dev(
    cluster_with_team: Template,
):
    [point] = cluster_with_team.find_resources("AWS::EFS::AccessPoint").values()
    properties = point["Properties"]
    assert properties["PosixUser"] == {"Uid": "1081", "Gid": "1081"}
    assert properties["RootDirectory"] == {
        "Path": "/team",
        "CreationInfo": {"OwnerUid": "1081", "OwnerGid": "1081", "Permissions": "0755"},
    }
    assert "SharedFilesFileSystem" in json.dumps(properties["FileSystemId"])
    outputs = cluster_with_team.find_outputs("*")
    assert "TeamShareAccessPointId" in outputs
    assert "-c gpudev:teamShareAccessPointId=" in json.dumps(outputs["MainStackContext"])


def test_off_by_default_the_cluster_stack_makes_no_team_access_point(cluster: Template):
    assert cluster.find_resources("AWS::EFS::AccessPoint") == {}
    outputs = cluster.find_outputs("*")
    assert "TeamShareAccessPointId" not in outputs
    assert "teamShareAccessPointId" not in json.dumps(outputs["MainStackContext"])


@pytest.fixture(scope="module")
def cluster() -> Template:
    return _cluster_template(CONTEXT)


def _environment(template: Template, function: str) -> dict[str, Any]:
    [found] = [
        f["Properties"]["Environment"]["Variables"]
        for name, f in template.find_resources("AWS::Lambda::Function").items()
        if name.startswith(function)
    ]
    return dict(found)


def test_the_lifecycle_and_the_api_get_the_mode_and_the_access_point(main_with_team: Template):
    for function in ("ReservationTasks", "Api"):
        environment = _environment(main_with_team, function)
        assert environment["SHARED_FILES_TEAM_SHARE"] == "rw"
        assert environment["SHARED_FILES_TEAM_ACCESS_POINT_ID"] == TEAM
        assert environment["SHARED_FILES_FILE_SYSTEM_ID"] == FILE_SYSTEM


def test_the_api_reads_the_metered_size_of_the_deployments_file_system_only(
    main_with_team: Template, template: Template
):
    def describes(t: Template) -> list[dict[str, Any]]:
        return [
            s
            for policy in t.find_resources("AWS::IAM::Policy").values()
            for s in policy["Properties"]["PolicyDocument"]["Statement"]
            if "elasticfilesystem:DescribeFileSystems" in json.dumps(s.get("Action"))
        ]

    [statement] = describes(main_with_team)
    resource = json.dumps(statement["Resource"])
    assert f":file-system/{FILE_SYSTEM}" in resource and "file-system/*" not in resource
    assert describes(template) == []  # no shared file system: no grant on one


def test_a_bad_team_share_value_stops_the_main_synth_with_a_sentence(
    tmp_path_factory: pytest.TempPathFactory,
):
    with pytest.raises(ValueError, match=r"gpudev:teamShare: off, ro \(read-only\) or rw"):
        _main(tmp_path_factory, {TEAM_SHARE.context_key: "yes"})


def test_a_team_share_without_its_access_point_is_an_error_of_the_main_stack_only(
    tmp_path_factory: pytest.TempPathFactory,
):
    """The first deploy (the cluster stack, which makes the access point) synthesizes the
    main stack too: the main stack carries the error, which `cdk synth` and its deploy
    report and fail on; the cluster stack carries none."""
    from aws_cdk.assertions import Annotations, Match

    from cdk_app.app import build_app
    from tests.support.certificates import synth_context

    context = {
        **synth_context(tmp_path_factory.mktemp("certs")),
        **CONTEXT,
        TEAM_SHARE.context_key: "ro",
    }
    app, stack = build_app(outdir=str(tmp_path_factory.mktemp("cdk.out")), context=context)
    app.synth()
    Annotations.from_stack(stack).has_error(
        "*", Match.string_like_regexp("needs the shared file system")
    )
    [cluster] = [s for s in app.node.children if getattr(s, "stack_name", "") == "GpuDevCluster"]
    Annotations.from_stack(cluster).has_no_error("*", Match.any_value())


def test_a_bad_team_share_value_stops_the_cluster_synth():
    with pytest.raises(ValueError, match="gpudev:teamShare: off, ro"):
        _cluster_template({**CONTEXT, TEAM_SHARE.context_key: "read-write"})
