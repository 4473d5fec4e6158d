"""Idle reclaim on the whole local deployment with a compressed clock (an hour lasts 36 s):
the simulated DCGM exporter reports every reservation's GPUs idle until
`python -m localcloud.gpu_activity REF busy`; the availability updater (ticked every
second) samples them. A reservation left idle past its `--idle-timeout` (and its first 30
clock minutes) is warned in its pod's banner and its timeline, then ends expired "idle
for 10 min" after the 30-minute grace, its disk saved, and its GPUs go to the next queued
request; the same timeout marked busy keeps running; `none` is never reclaimed."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest

from localcloud import gpu_activity
from localcloud.stack import LocalCloud
from tests.lifecycle.conftest import SECONDS_PER_HOUR
from tests.lifecycle.helpers import assert_nothing_left, objects_of, reserve, show, wait_for_status
from tests.support.api import ApiClient
from tests.support.waiting import wait_for


@pytest.fixture
def disk(local_cloud: LocalCloud) -> str:
    name = f"idle-{uuid.uuid4().hex[:6]}"
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn) VALUES"
            " ('alice', 'arn:aws:iam::123456789012:user/alice') ON CONFLICT DO NOTHING"
        )
        conn.execute("INSERT INTO disks (user_id, disk_name) VALUES ('alice', %s)", (name,))
    return name


def _disk_saved_and_free(cloud: LocalCloud, name: str) -> bool:
    with psycopg.connect(cloud.database_url) as conn:
        row = conn.execute(
            "SELECT reservation_id IS NULL AND snapshot_count > 0 FROM disks WHERE disk_name = %s",
            (name,),
        ).fetchone()
    return bool(row and row[0])


def _banner(cloud: LocalCloud, rid: str) -> str:
    [config_map] = objects_of(cloud, rid)["configmaps"]
    return str((config_map.get("data") or {}).get("health_warning") or "")


def _timeline(api: ApiClient, rid: str) -> list[str]:
    events = api.call("GET", f"/v1/reservations/{rid}/events").body["events"]
    return [e["detail"] for e in events if e["kind"] == "health"]


def test_idle_is_warned_then_ended_with_its_disk_saved_while_busy_and_none_keep_running(
    api: ApiClient, local_cloud: LocalCloud, disk: str, tmp_path: Any
):
    idle = reserve(api, gpu_type="h100", gpu_count=8, hours=3, idle_timeout="10m", disk_name=disk)[
        "reservation_id"
    ]
    busy = reserve(api, gpu_type="h100", gpu_count=8, hours=3, idle_timeout="10m")["reservation_id"]
    never = reserve(api, hours=3, idle_timeout="none")["reservation_id"]
    for rid in (idle, busy, never):
        wait_for_status(api, rid, "active", timeout=60)
    assert show(api, idle)["idle_timeout_minutes"] == 10
    assert show(api, never)["idle_timeout_minutes"] is None
    # Busy through the documented tool, found through the cloud's stack.json.
    stack = tmp_path / "stack.json"
    stack.write_text(json.dumps(local_cloud.describe()))
    assert gpu_activity.main([busy, "busy", "--stack", str(stack)]) == 0
    queued = reserve(api, gpu_type="h100", gpu_count=8, profile="bob")["reservation_id"]
    wait_for_status(api, queued, "queued", profile="bob")

    # Warned: the banner (the pod's control ConfigMap) and the timeline, once.
    minute = SECONDS_PER_HOUR / 60
    warned = wait_for(
        lambda: show(api, idle).get("idle_warning"), timeout=60 * minute, message="idle warned"
    )
    assert "have not been used for 10 min" in warned
    wait_for(lambda: "idle:" in _banner(local_cloud, idle), timeout=10, message="banner")

    ended = wait_for_status(api, idle, ("expired", "failed", "cancelled"), timeout=60 * minute)
    assert ended["status"] == "expired"
    assert ended["failure_reason"] == "expired: idle for 10 min"
    assert [d.split(":")[0] for d in _timeline(api, idle)] == ["warning", "idle"]
    wait_for(lambda: _disk_saved_and_free(local_cloud, disk), timeout=30, message="disk saved")
    assert_nothing_left(local_cloud, idle)
    wait_for_status(api, queued, "active", profile="bob", timeout=30)

    # Sampled all along: the busy one's GPUs show their use; it and `none` keep running.
    use = api.call("GET", f"/v1/reservations/{busy}/utilisation").body
    assert len(use["gpus"]) == 8 and min(g["mean_util_percent"] for g in use["gpus"]) >= 60
    assert show(api, busy)["status"] == "active" and show(api, busy)["idle_warning"] is None
    assert show(api, never)["status"] == "active"
    recent = api.call("GET", "/v1/utilisation").body["reservations"]
    assert {r["reservation_id"] for r in recent} >= {busy, never}
