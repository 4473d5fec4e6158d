"""Ctrl+C always ends `make run` within 10 s, and a new one starts at once on the same ports,
clean: its database, AWS (moto) and cluster are all new, and its banner says so.

Each cloud here runs in a child process with its own embedded PostgreSQL (under .local, so
the unprivileged server user can reach it): stopping one in the middle of work must not
touch the session's clouds, which share this process's moto, environment and pool."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psycopg

from tests.support.api import ApiClient
from tests.support.child_processes import running
from tests.support.local_cloud_process import LocalCloudProcess, child_environment, free_ports

ROOT = Path(__file__).resolve().parents[2]
STOP_LIMIT_SECONDS = 10.0


def _traffic(stack: dict[str, Any]) -> None:
    """Requests the servers close: each leaves a connection in TIME_WAIT on the server side."""
    api = ApiClient.for_cloud_description(stack)
    for _ in range(5):
        assert api.call("GET", "/v1/me").status == 200
    kubeconfig = json.loads(Path(stack["kubeconfig"]).read_text())
    ca = base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"])
    context = ssl.create_default_context(cadata=ca.decode())
    for _ in range(5):
        try:
            urllib.request.urlopen(
                stack["kubernetes_url"] + "/api/v1/nodes", timeout=5, context=context
            )
        except urllib.error.HTTPError as error:
            assert error.code == 401  # no bearer token: answered all the same


def test_ctrl_c_ends_the_local_cloud_at_once_and_a_new_one_starts_on_the_same_ports(
    state_dir: Path,
):
    ports = free_ports()
    # The first with the API in a process of its own: Ctrl+C ends that process too.
    first = LocalCloudProcess(state_dir, ports, "--api-processes=1")
    try:
        stack = first.wait_until_up()
        postgres_pid = first.postgres_pid
        _traffic(stack)
        [api_process] = first.api_process_pids()
        sqs_process = first.sqs_process_pid()
        took = first.interrupt()
    finally:
        first.kill()
    print(f"python -m localcloud stopped by SIGINT in {took:.2f} s")
    assert first.process.returncode == 0, "".join(first.output[-30:])
    assert took < STOP_LIMIT_SECONDS, "".join(first.output[-30:])
    assert "stopped in" in first.output[-1]
    assert not running(postgres_pid), "PostgreSQL outlived the local cloud"
    assert not Path(f"/proc/{api_process}").exists(), "an API process outlived the local cloud"
    assert not Path(f"/proc/{sqs_process}").exists(), "the SQS process outlived the local cloud"
    assert not (state_dir / "stack.json").exists()

    second = LocalCloudProcess(state_dir, ports)
    try:
        stack = second.wait_until_up()
        assert stack["api_url"].endswith(f":{ports['api']}")
        with urllib.request.urlopen(stack["api_url"] + "/health", timeout=5) as reply:
            assert reply.status == 200
        assert second.interrupt() < STOP_LIMIT_SECONDS
    finally:
        second.kill()
    assert second.process.returncode == 0, "".join(second.output[-30:])


def test_a_cloud_stopped_while_handlers_are_blocked_in_kubernetes_calls_stops_within_10_s(
    state_dir: Path,
):
    scenario = subprocess.run(
        [sys.executable, "-m", "tests.support.stop_scenario", str(state_dir), "busy"],
        cwd=ROOT,
        env=child_environment(),
        capture_output=True,
        text=True,
        timeout=180,
    )
    lines = [line for line in scenario.stdout.splitlines() if line.startswith("REPORT ")]
    assert scenario.returncode == 0 and lines, scenario.stdout[-3000:] + scenario.stderr[-3000:]
    report = json.loads(lines[-1].removeprefix("REPORT "))
    print(f"busy stop: {report['stop_seconds']:.2f} s, steps {report['steps']}")

    assert report["stop_seconds"] < STOP_LIMIT_SECONDS
    # The servers are gone at once; handler threads still in a call are daemon threads
    # (never waited for) and end when their call returns.
    servers = ("api-gateway", "kubernetes-api", "moto-server")
    assert not [t for t in report["alive_after_stop"] if t["name"] in servers]
    assert all(t["daemon"] for t in report["alive_after_stop"])
    assert report["alive_later"] == []
    assert report["postgres_pid"] is not None and not running(report["postgres_pid"])


def _rest_of_banner(cloud: LocalCloudProcess) -> str:
    assert cloud.process.stdout is not None
    lines = []
    for line in cloud.process.stdout:
        lines.append(line)
        if "Ctrl+C stops everything" in line:
            break
    return "".join(lines)


def test_a_restart_starts_clean_and_says_so_never_keeping_rows_that_point_at_gone_objects(
    state_dir: Path,
):
    """moto's volumes and snapshots and the stand-in's cluster live in memory: a database
    kept across the restart would name a disk's volume, or a reservation's pods, that no
    longer exist. The embedded PostgreSQL's database is made anew at every start."""
    ports = free_ports()
    first = LocalCloudProcess(state_dir, ports)
    try:
        stack = first.wait_until_up()
        with psycopg.connect(stack["database_url"]) as conn:
            conn.execute(
                "INSERT INTO users (username, principal_arn)"
                " VALUES ('alice', 'arn:aws:iam::123456789012:user/alice')"
            )
            conn.execute(
                "INSERT INTO disks (user_id, disk_name, ebs_volume_id, snapshot_count)"
                " VALUES ('alice', 'work', 'vol-0123456789abcdef0', 3)"
            )
        assert first.interrupt() < STOP_LIMIT_SECONDS
    finally:
        first.kill()

    second = LocalCloudProcess(state_dir, ports)
    try:
        stack = second.wait_until_up()
        banner = _rest_of_banner(second)
        with psycopg.connect(stack["database_url"]) as conn:
            disks = conn.execute("SELECT count(*) FROM disks").fetchone()
            users = conn.execute("SELECT count(*) FROM users").fetchone()
            types = conn.execute("SELECT count(*) FROM gpu_types").fetchone()
        assert second.interrupt() < STOP_LIMIT_SECONDS
    finally:
        second.kill()
    assert "NEW: every start is clean" in banner
    assert (disks, users) == ((0,), (0,)), "nothing of the earlier run is kept"
    assert types is not None and types[0] > 0, "migrated: the GPU catalogue is there"
