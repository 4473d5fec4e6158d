"""`show`, `cancel`, `connect`, `extend` and `edit` by reservation name as well as id, and
`cancel --all`, against the local cloud with two principals: never anything of anyone
else's."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import psycopg
from click.testing import Result

from localcloud.stack import LocalCloud
from tests.support.databases import fetch_rows, mark_ended


def _json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _reserve(run: Any, name: str, profile: str = "alice") -> str:
    reserved = run(
        "-o", "json", "reserve", "-t", "t4", "-h", "1", "--name", name, "--no-wait", profile=profile
    )
    return str(_json(reserved)["reservation_id"])


def _cancel_requested(cloud: LocalCloud, rids: list[str]) -> dict[str, bool]:
    return dict(
        fetch_rows(
            cloud.database_url,
            "SELECT reservation_id::text, cancel_requested_at IS NOT NULL FROM reservations"
            " WHERE reservation_id = ANY(%s::uuid[])",
            rids,
        )
    )


def test_show_and_cancel_by_name(run):
    name = f"train-{uuid.uuid4().hex[:8]}"
    rid = _reserve(run, name)
    assert _json(run("-o", "json", "show", name))["reservation_id"] == rid
    assert name in run("show", name).stdout
    cancelled = _json(run("cancel", name, "-o", "json"))
    assert cancelled["reservation_id"] == rid and cancelled["cancel_requested_at"]


def test_an_ambiguous_name_lists_the_candidates_and_changes_nothing(run, local_cloud):
    name = f"twin-{uuid.uuid4().hex[:8]}"
    first, second = _reserve(run, name), _reserve(run, name)
    commands = [
        ("show", name),
        ("cancel", name),
        ("connect", name),
        ("extend", name, "-h", "1"),
        ("edit", name, "--enable-jupyter"),
    ]
    for command in commands:
        result = run(*command)
        assert result.exit_code == 1 and result.stdout == ""
        assert f"2 reservations are named '{name}'" in result.stderr
        assert first[:8] in result.stderr and second[:8] in result.stderr
        assert "give the id instead" in result.stderr
    assert _cancel_requested(local_cloud, [first, second]) == {first: False, second: False}
    changed = fetch_rows(
        local_cloud.database_url,
        "SELECT duration_hours, jupyter_enabled FROM reservations"
        " WHERE reservation_id = ANY(%s::uuid[])",
        [first, second],
    )
    assert sorted(changed) == [(1.0, False), (1.0, False)], "nothing extended or changed"


def test_a_live_reservation_wins_over_ended_ones_of_the_same_name(run, local_cloud):
    name = f"reused-{uuid.uuid4().hex[:8]}"
    old = _reserve(run, name)
    mark_ended(local_cloud.database_url, old, "cancelled")
    assert _json(run("-o", "json", "show", name))["reservation_id"] == old  # only ended ones
    new = _reserve(run, name)
    assert _json(run("-o", "json", "show", name))["reservation_id"] == new


def test_names_and_ids_of_others_are_not_found(run, local_cloud):
    name = f"bobs-{uuid.uuid4().hex[:8]}"
    bobs = _reserve(run, name, profile="bob")
    for reference in (name, bobs[:8], bobs):
        result = run("cancel", reference)
        assert result.exit_code == 1
        assert f"no reservation with the id or name '{reference}'" in result.stderr
    assert _cancel_requested(local_cloud, [bobs]) == {bobs: False}
    short = run("show", "e85")
    assert short.exit_code == 1 and "ids have at least 8 characters" in short.stderr
    long = run("show", "n" * 3000)
    assert long.exit_code == 1 and f"'{'n' * 40}…'" in long.stderr and len(long.stderr) < 200


def test_connect_by_name_says_when_it_is_not_active(run):
    name = f"wait-{uuid.uuid4().hex[:8]}"
    rid = _reserve(run, name)
    result = run("connect", name)
    assert (
        result.exit_code == 1 and f"reservation {rid[:8]} is pending, not active" in result.stderr
    )


def test_connect_by_name_runs_ssh_for_that_reservation(run, local_cloud, tmp_path, monkeypatch):
    # ssh itself is the outer boundary: a stand-in records how it was called.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/ssh-args\n')
    (bin_dir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    name = f"ssh-{uuid.uuid4().hex[:8]}"
    rid = _reserve(run, name)
    _reserve(run, f"other-{name}")
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "UPDATE reservations SET status = 'active', launched_at = now(),"
            " expires_at = now() + interval '1 hour', node_ip = '10.0.0.8', node_port = 30124"
            " WHERE reservation_id = %s",
            (rid,),
        )
    result = run("connect", name)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "ssh-args").read_text().split()[-1] == f"gpu-dev-{rid[:8]}"


def test_cancel_all_ends_every_live_reservation_of_the_caller_and_nothing_else(run, local_cloud):
    carols = [_reserve(run, f"all-{n}", profile="carol") for n in range(3)]
    ended = _reserve(run, "all-ended", profile="carol")
    mark_ended(local_cloud.database_url, ended, "cancelled")
    alices = _reserve(run, "all-alice")
    live_before = [
        r["reservation_id"]
        for r in _json(run("-o", "json", "list", profile="carol"))
        if r["status"] in ("pending", "queued", "preparing", "active")
    ]
    assert set(carols) <= set(live_before)

    refused = run("cancel", "--all", profile="carol")  # no terminal, no --yes
    assert refused.exit_code == 2 and "cancel --all needs --yes" in refused.output
    declined = run("cancel", "--all", "--interactive", input="n\n", profile="carol")
    assert declined.exit_code == 1 and "Cancel all" in declined.stderr
    assert all(r[:8] in declined.stderr for r in carols)  # what would be cancelled is listed
    assert not any(_cancel_requested(local_cloud, carols).values())

    cancelled = _json(run("cancel", "--all", "--yes", "-o", "json", profile="carol"))
    assert sorted(r["reservation_id"] for r in cancelled) == sorted(live_before)
    assert all(_cancel_requested(local_cloud, live_before).values())
    assert _cancel_requested(local_cloud, [ended, alices]) == {ended: False, alices: False}

    # the cancelled ones are still live until torn down: cancelling again is harmless
    again = run("cancel", "--all", "--yes", profile="carol")
    assert again.exit_code == 0, again.output


def test_cancel_needs_a_reservation_or_all_but_not_both(run):
    neither = run("cancel")
    assert neither.exit_code == 2 and "give its id or name, or --all" in neither.output
    both = run("cancel", "x", "--all")
    assert both.exit_code == 2 and "not both" in both.output
