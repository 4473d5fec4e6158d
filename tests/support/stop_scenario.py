"""Stop a local cloud in the middle of work, in a process of its own, and report as JSON.

A LocalCloud holds process-wide state (moto's backends, the environment, the connection
pool), so a test that must stop one while handlers are still running runs this module as a
child process (`python -m tests.support.stop_scenario STATE_DIR busy`), leaving the session's
clouds alone. `bench/local_cloud_stop.py` prints the same figures.

- idle: nothing submitted;
- busy: reservations submitted as alice (the jobs consumer, the reservation state machine
  and the allocator run), then every Kubernetes response delayed by 30 s, so handlers are
  blocked in Kubernetes calls (10 s client timeout) when the stop begins.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from localcloud.stack import LocalCloud, Options
from tests.support.api import ApiClient

# Threads our components name; moto's and the servers' request threads are anonymous.
OUR_THREADS = ("sqs-", "tick-", "simulated-cluster", "api-gateway", "kubernetes-api", "moto-")


def _make_busy(cloud: LocalCloud) -> None:
    api = ApiClient.for_cloud(cloud)
    for i in range(6):
        body = {
            "gpu_type": "t4",
            "gpu_count": 1,
            "hours": 1,
            "client_request_id": f"busy-{i}",
            "github_user": "alice",
        }
        reply = api.call("POST", "/v1/reservations", body=body)
        assert reply.status in (200, 202), reply.body
    time.sleep(2.0)
    assert cloud.kubernetes is not None
    cloud.kubernetes.faults.delay_seconds = 30.0
    time.sleep(3.0)  # the ticker fires every second: its handlers are now in Kubernetes calls


def _ours_alive() -> list[dict[str, Any]]:
    return [
        {"name": t.name, "daemon": t.daemon}
        for t in threading.enumerate()
        if t.is_alive() and t.name.startswith(OUR_THREADS)
    ]


def run(state_dir: Path, scenario: str) -> dict[str, Any]:
    options = Options(
        tick_seconds=1.0,
        kubelet_delay_seconds=0.2,
        seconds_per_hour=36.0,
        ready_timeout_seconds=6.0,
        ready_poll_seconds=1,
        max_live_reservations_per_user=10,  # the busy scenario holds 6 as alice
    )
    cloud = LocalCloud(state_dir, options).start()
    postgres_pid = cloud.postgres_pid
    if scenario == "busy":
        _make_busy(cloud)
    began = time.monotonic()
    cloud.stop()
    took = time.monotonic() - began
    alive_after_stop = _ours_alive()
    # Abandoned handlers end once their Kubernetes call times out (10 s) and they see the stop.
    deadline = time.monotonic() + 15
    while _ours_alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    return {
        "scenario": scenario,
        "stop_seconds": took,
        "steps": cloud.stop_times,
        "alive_after_stop": alive_after_stop,
        "alive_later": _ours_alive(),
        "postgres_pid": postgres_pid,
    }


def main(argv: list[str]) -> int:
    state_dir, scenario = Path(argv[0]), argv[1]
    report = run(state_dir, scenario)
    print("REPORT " + json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    # As `python -m localcloud` does: abandoned daemon threads (moto's executions, handlers
    # still in a call) are not waited for, nor torn down with the interpreter (which was
    # seen to abort, SIGABRT, while they ran).
    code = main(sys.argv[1:])
    sys.stderr.flush()
    os._exit(code)
