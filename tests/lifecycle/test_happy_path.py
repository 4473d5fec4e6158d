"""A reservation's whole life on the local cloud: queue → provision → active with every
object → warnings at 30/15/5 clock minutes in order and on time → expiry with nothing left."""

from __future__ import annotations

import time
from datetime import datetime

from tests.lifecycle.conftest import MINUTE
from tests.lifecycle.helpers import (
    allocated_slots,
    assert_nothing_left,
    execution_history,
    objects_of,
    reserve,
    wait_for_status,
)


def test_reserve_activate_warn_and_expire(api, local_cloud):
    reservation = reserve(api, gpu_type="t4", gpu_count=2, hours=0.6, github_user="alice")
    rid = reservation["reservation_id"]
    active = wait_for_status(api, rid, "active")
    assert active["ssh_command"] == f"ssh -p {active['node_port']} dev@{active['node_ip']}"
    # GPU node groups are in public subnets: users connect to the node's ExternalIP.
    assert active["node_address_kind"] == "external" and active["node_ip"].startswith("54.")
    assert active["launched_at"] and active["expires_at"]
    objects = objects_of(local_cloud, rid)
    assert [p["status"]["phase"] for p in objects["pods"]] == ["Running"]
    services = {s["metadata"]["name"]: s["spec"] for s in objects["services"]}
    assert services[f"gpu-dev-{rid[:8]}-ssh"]["type"] == "NodePort"
    assert services[f"gpu-dev-{rid[:8]}-headless"]["clusterIP"] == "None"
    assert len(objects["configmaps"]) == 1 and len(objects["secrets"]) == 1
    pod = objects["pods"][0]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert {"name": "HF_HOME", "value": "/workspace/.cache/huggingface"} in pod["containers"][0][
        "env"
    ]
    assert allocated_slots(local_cloud, rid) == 2

    expires = datetime.fromisoformat(active["expires_at"]).timestamp()
    seen: list[tuple[str, float]] = []
    while time.time() < expires + 5 and not (seen and seen[-1][0] == "5"):
        data = objects_of(local_cloud, rid)["configmaps"]
        level = data[0]["data"]["warning_level"] if data else ""
        if level and (not seen or seen[-1][0] != level):
            seen.append((level, time.time()))
        time.sleep(0.05)
    assert [level for level, _ in seen] == ["30", "15", "5"]
    for level, at in seen:
        due = expires - int(level) * MINUTE
        assert due - 0.5 <= at <= due + 3, (level, at - due)

    ended = wait_for_status(api, rid, "expired", timeout=30)
    assert ended["reservation_ended"]
    assert_nothing_left(local_cloud, rid)
    assert allocated_slots(local_cloud, rid) == 0
    history = execution_history(local_cloud, rid)
    assert history[:4] == [
        "Validate request",
        "Queue, cancel or done?",
        "Image to build?",  # no --dockerfile: straight on
        "Wait for capacity",
    ]
    assert "Provision" in history and "Take the disk" in history  # no disk: "none"
    # The pod is looked at right after it was created (no Wait first): the check watches it.
    provisioned = history.index("Provision")
    assert history[provisioned + 1 : provisioned + 3] == [
        "Provisioned?",
        "Is the pod ready?",
    ]
    assert history[-6:] == [
        "Tear down",
        "No failed snapshot yet",
        "Save the disk",
        "Disk saved?",
        "How did it end?",
        "Expired",
    ]
