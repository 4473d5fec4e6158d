"""What `edit` and `extend` answer matches what happens (a queued reservation's change
applies at its start, an active one's within the change-wake bound; an added user without
GitHub keys is told so), and every node of a multinode reservation is reachable: one Host
per node in its SSH config, all pinned to the reservation's one host key, as the real
OpenSSH reads it (`ssh -G`), and one connect line per node in `show`."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gpudev_cli import context, render, replies, ssh
from gpudev_cli.client import CliError
from gpudev_cli.main import cli
from tests.unit import test_cli_pinned_hosts_and_jupyter as pinned
from tests.unit import test_cli_ssh
from tests.unit.test_cli_ssh import SSH, resolved

homes = test_cli_ssh.homes  # GPU_DEV_HOME and HOME in a temporary directory
fake_ssh = pinned.fake_ssh
HOST_KEY = pinned.HOST_KEY

BASE: dict[str, Any] = {
    "reservation_id": "7a6b5c4d-0000-4000-8000-000000000007",
    "duration_hours": 6.0,
    "total_nodes": 1,
}
QUEUED = {**BASE, "status": "queued", "expires_at": None, "expires_in_minutes": None}
PREPARING = {**BASE, "status": "preparing", "expires_at": None}
ACTIVE = {
    **BASE,
    "status": "active",
    "expires_at": "2030-01-01T18:30:00+00:00",
    "expires_in_minutes": 190,
}
TWO_NODES = {
    **pinned.PINNED,
    "reservation_id": "5e4d3c2b-0000-4000-8000-000000000005",
    "status": "active",
    "gpu_type": "h100",
    "gpu_count": 16,
    "total_nodes": 2,
    "duration_hours": 4.0,
    "ssh_host_keys": [HOST_KEY],
    "node_ip": "54.12.34.56",
    "node_port": 30022,
    "ssh_nodes": [
        {"rank": 1, "node_ip": "54.12.34.57", "node_port": 30023, "node_address_kind": "external"},
        {"rank": 0, "node_ip": "54.12.34.56", "node_port": 30022, "node_address_kind": "external"},
    ],
}


@pytest.mark.parametrize(
    ("reservation", "when"),
    [
        (QUEUED, "it is queued: this applies when it starts"),
        ({**QUEUED, "status": "pending"}, "it is pending: this applies when it starts"),
        (PREPARING, "it is starting: this applies once its pod is ready"),
        (ACTIVE, "this applies to the running pod within 3 minutes"),
    ],
    ids=["queued", "pending", "preparing", "active"],
)
def test_every_change_says_when_it_applies(reservation: dict[str, Any], when: str):
    assert replies.jupyter_changed(reservation, True) == (
        f"Jupyter on: {when}; then open it with `gpu-dev connect 7a6b5c4d --jupyter`."
    )
    assert replies.jupyter_changed(reservation, False) == f"Jupyter off: {when}."
    assert when in replies.user_added(reservation, "octocat")


def test_jupyter_on_a_queued_reservation_never_says_it_is_on_now():
    assert "Jupyter on (it starts within seconds)" not in replies.jupyter_changed(QUEUED, True)
    assert "when it starts" in replies.jupyter_changed(QUEUED, True)


def test_an_added_user_is_told_they_log_in_with_their_github_keys():
    reply = replies.user_added(ACTIVE, "octocat")
    assert "may now log in" not in reply
    assert "https://github.com/octocat.keys" in reply and "gpu-dev show 7a6b5c4d" in reply


def test_an_added_user_github_lists_no_keys_for_is_told_to_add_one():
    keyless = {**ACTIVE, "keyless_users": ["OctoCat"]}
    reply = replies.user_added(keyless, "octocat")
    assert "GitHub lists no public keys for them yet" in reply
    assert "they can log in once they add one" in reply


def test_a_user_removed_from_a_queued_reservation_is_simply_not_let_in():
    assert replies.user_removed(QUEUED, "octocat") == (
        "octocat removed: they will not be let in when it starts."
    )
    assert "within 3 minutes" in replies.user_removed(ACTIVE, "octocat")


def test_an_extension_prints_the_new_expiry():
    assert replies.extended(ACTIVE, 2) == (
        "Extended 7a6b5c4d by 2 h (6 h in total): it now expires 2030-01-01 18:30 UTC "
        "(in 3 h 10 min)."
    )


def test_an_extension_of_a_queued_reservation_counts_from_its_start():
    assert replies.extended(QUEUED, 2) == (
        "Extended 7a6b5c4d by 2 h (6 h in total): the hours count from its start."
    )
    assert "applies within seconds" not in replies.extended(PREPARING, 2)


@pytest.mark.skipif(not Path(SSH).exists(), reason="OpenSSH client not installed")
@pytest.mark.parametrize(
    ("alias", "address"),
    [
        ("gpu-dev-5e4d3c2b", ("54.12.34.56", "30022")),
        ("gpu-dev-5e4d3c2b-node1", ("54.12.34.57", "30023")),
    ],
    ids=["node0", "node1"],
)
def test_every_node_has_its_own_host_pinned_to_the_reservations_key(
    alias: str, address: tuple[str, str]
):
    ssh.sync_configs([TWO_NODES])
    options = resolved("-F", str(ssh.config_file(TWO_NODES)), alias)
    assert (options["hostname"], options["port"]) == address
    assert options["user"] == "dev"
    # one host key for the reservation, whichever node answers
    assert options["hostkeyalias"] == "gpu-dev-5e4d3c2b"
    assert options["stricthostkeychecking"] == "true"
    assert options["userknownhostsfile"] == str(ssh.known_hosts_file(TWO_NODES))
    assert ssh.known_hosts_file(TWO_NODES).read_text() == f"gpu-dev-5e4d3c2b {HOST_KEY}\n"


@pytest.mark.skipif(not Path(SSH).exists(), reason="OpenSSH client not installed")
def test_each_printed_node_command_resolves_to_that_node():
    ssh.sync_configs([TWO_NODES])
    for rank, port in ((0, "30022"), (1, "30023")):
        options = test_cli_ssh.run_printed(ssh.printed_command(TWO_NODES, rank=rank))
        assert options["port"] == port


def _panel(reservation: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> str:
    from rich.console import Console

    out = io.StringIO()
    monkeypatch.setattr(render, "console", Console(file=out, width=200, no_color=True))
    ssh.sync_configs([reservation])
    render.reservation_panel({**reservation, "jupyter_enabled": False, "disk_name": None})
    return out.getvalue()


def test_show_says_how_many_nodes_are_ready_and_one_connect_line_per_node(monkeypatch):
    text = _panel(TWO_NODES, monkeypatch)
    assert "2/2 nodes ready" in text
    assert "gpu-dev connect 5e4d3c2b [--node N]" in text
    assert "Node 0:  ssh -F" in text and text.rstrip().count("gpu-dev-5e4d3c2b-node1") == 1
    assert "Node 1:  ssh -F" in text


def test_show_says_which_added_users_have_no_github_keys(monkeypatch):
    keyless = {**TWO_NODES, "secondary_users": ["octocat"], "keyless_users": ["octocat"]}
    text = " ".join(_panel(keyless, monkeypatch).split())
    assert (
        "octocat: no public keys on GitHub yet (https://github.com/octocat.keys): they can "
        "log in once they add one" in text
    )


def test_a_single_node_reservation_keeps_one_ssh_line(monkeypatch):
    single = {**TWO_NODES, "total_nodes": 1, "ssh_nodes": TWO_NODES["ssh_nodes"][1:]}
    text = _panel(single, monkeypatch)
    assert "nodes ready" not in text and "Node 0" not in text
    assert "SSH:     ssh -F" in text


def test_connect_to_node_1_runs_ssh_to_that_nodes_alias(fake_ssh, monkeypatch):
    pinned._api_answers(TWO_NODES, monkeypatch)
    done = CliRunner().invoke(cli, ["connect", "5e4d3c2b", "--node", "1"])
    assert done.exit_code == 0, done.output
    assert fake_ssh.read_text().splitlines()[-1] == "gpu-dev-5e4d3c2b-node1"


def test_connect_to_a_node_the_reservation_lacks_is_one_clear_error(fake_ssh, monkeypatch):
    pinned._api_answers(TWO_NODES, monkeypatch)
    done = CliRunner().invoke(cli, ["connect", "5e4d3c2b", "--node", "2"])
    assert done.exit_code == 1
    assert "has no node 2 with an SSH endpoint (its nodes: 0, 1)" in " ".join(done.output.split())
    assert not fake_ssh.exists()


def test_jupyter_is_on_node_0_only(fake_ssh, monkeypatch):
    pinned._api_answers(TWO_NODES, monkeypatch)
    done = CliRunner().invoke(cli, ["connect", "5e4d3c2b", "--jupyter", "--node", "1"])
    assert done.exit_code == 2 and "Jupyter runs on node 0 only" in done.output
    assert not fake_ssh.exists()


def test_ssh_command_refuses_an_unknown_node():
    with pytest.raises(CliError, match="no node 3"):
        ssh.ssh_command(TWO_NODES, rank=3)


def test_list_keeps_eight_character_ids_in_an_80_column_terminal(monkeypatch):
    from rich.console import Console

    out = io.StringIO()
    monkeypatch.setattr(render, "console", Console(file=out, width=80, no_color=True))
    row = {
        **ACTIVE,
        "name": "a-rather-long-reservation-name",
        "gpu_type": "h100",
        "gpu_count": 8,
        "created_at": "2030-01-01T12:00:00+00:00",
        "queue_position": None,
    }
    render.reservations_table([row, {**row, "reservation_id": "ea90b1c2-0000-4000-8000-0"}])
    text = out.getvalue()
    assert "7a6b5c4d" in text and "ea90b1c2" in text
    assert "ea90…" not in text and all(len(line) <= 80 for line in text.splitlines())


def test_replies_module_uses_the_clis_short_ids():
    assert context.short(BASE["reservation_id"]) == "7a6b5c4d"
