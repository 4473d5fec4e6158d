"""`gpu-dev show` lists the reservation's mounts and `gpu-dev disk list` ends with the
personal share's access point and the file system's metered size, labelled as the whole
file system's (docs/shared-files.md "What show and disk list say"), through the real CLI."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from gpudev.settings import shared_files_settings
from localcloud import moto_efs


@pytest.fixture
def team_share_ro() -> Iterator[None]:
    """The deployment's team share read-only for the in-process functions."""
    before = os.environ.get("SHARED_FILES_TEAM_SHARE")
    os.environ["SHARED_FILES_TEAM_SHARE"] = "ro"
    shared_files_settings.cache_clear()
    yield
    if before is None:
        os.environ.pop("SHARED_FILES_TEAM_SHARE", None)
    else:
        os.environ["SHARED_FILES_TEAM_SHARE"] = before
    shared_files_settings.cache_clear()


def test_show_lists_the_mounts_in_the_table_and_in_json(run, team_share_ro):
    assert os.environ.get("SHARED_FILES_FILE_SYSTEM_ID", "off") != "off"
    reserved = run("--output", "json", "reserve", "-t", "t4", "-g", "1", "-h", "1", "--no-wait")
    assert reserved.exit_code == 0, reserved.output
    rid = json.loads(reserved.stdout)["reservation_id"]

    shown = run("show", rid[:8])
    assert shown.exit_code == 0, shown.output
    for said in ("Mounts", "/home/dev", "/workspace", "/shared-personal", "/shared ", "read-only"):
        assert said in shown.stdout, said
    mounts = {m["path"]: m for m in json.loads(run("-o", "json", "show", rid[:8]).stdout)["mounts"]}
    assert mounts["/shared"]["mode"] == "ro" and mounts["/shared"]["what"] == "team share"
    assert mounts["/home/dev"]["what"] == "pod disk"
    assert mounts["/shared-personal"]["mode"] == "rw"
    run("cancel", rid[:8])


def test_disk_list_ends_with_the_share_and_the_file_systems_metered_size(run, team_share_ro):
    file_system = os.environ["SHARED_FILES_FILE_SYSTEM_ID"]
    moto_efs.meter(file_system, 7 * 2**30, 1_795_000_000)
    listed = run("disk", "list")
    assert listed.exit_code == 0, listed.output
    out = " ".join(listed.stdout.split())  # rich wraps long lines
    assert "Personal share /shared-personal: access point" in out
    assert f"Usage: 7.0 GiB on file system {file_system} (the whole file system" in out
    assert "EFS meters no access point alone" in out
    assert "Team share /shared: read-only." in out
    # JSON stays the list of disks (scripts read it)
    assert isinstance(json.loads(run("-o", "json", "disk", "list").stdout), list)
