"""Every function in execution environments of its own (`--api-processes`,
`--function-processes`): a reservation goes from the API's 202 to active through the queue's
consumer, Step Functions and the lifecycle's tasks (whose wait for capacity runs the
allocator's pass), each served by another OS process, as Lambda runs them; Ctrl+C then
leaves none of them behind.

The cloud is `python -m localcloud` in a child process with its own PostgreSQL (the
session's clouds run every function in the test process)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.support.api import ApiClient
from tests.support.local_cloud_process import LocalCloudProcess, free_ports

STOP_LIMIT_SECONDS = 10.0
ACTIVE_WITHIN_SECONDS = 90.0  # kubelet 2 s and probe 2 s by default; cold starts on 2 cores


def _show(api: ApiClient, reservation_id: str) -> dict[str, Any]:
    reply = api.call("GET", f"/v1/reservations/{reservation_id}", profile="alice")
    assert reply.status == 200, reply.body
    return dict(reply.body)


def test_a_reservation_becomes_active_with_every_function_in_processes_of_its_own(
    state_dir: Path,
):
    ports = free_ports()
    cloud = LocalCloudProcess(state_dir, ports, "--api-processes=1", "--function-processes=1")
    try:
        stack = cloud.wait_until_up()
        api = ApiClient.for_cloud_description(stack)
        body = {"gpu_type": "h100", "gpu_count": 4, "hours": 1, "github_user": "alice"}
        reply = api.call("POST", "/v1/reservations", profile="alice", body=body)
        assert reply.status == 202, reply.body
        reservation_id = reply.body["reservation_id"]
        deadline = time.monotonic() + ACTIVE_WITHIN_SECONDS
        while (shown := _show(api, reservation_id))["status"] != "active":
            assert shown["status"] in {"pending", "queued", "preparing"}, shown
            assert time.monotonic() < deadline, f"not active in time: {shown}"
            time.sleep(0.5)
        serving = cloud.serving_processes()
        took = cloud.interrupt()
    finally:
        cloud.kill()

    # The lifecycle's functions ran in processes of their own, one each at most here (the
    # schedules' functions too once the ticker fired, which it may not have by then).
    names = sorted(serving.values())
    for name in ("Api", "JobsConsumer", "ReservationTasks"):
        assert names.count(name) == 1, names
    assert cloud.process.returncode == 0, "".join(cloud.output[-30:])
    assert took < STOP_LIMIT_SECONDS, "".join(cloud.output[-30:])
    left = [pid for pid in serving if Path(f"/proc/{pid}").exists()]
    assert left == [], f"function processes outlived the local cloud: {left}"
