"""Where the time of "reserve → active" and "cancel → pod gone" goes on the local cloud.

A LocalCloud in this process on its own embedded PostgreSQL (a temporary directory under
.local), free capacity, the real clock (one hour lasts an hour), and the simulated kubelet
starting a bound pod after 1 s. Each round reserves one T4 through the signed API, waits
until the API says `active`, then cancels it and waits until its pod is gone from the
cluster. The stages come from what each part recorded:

reserve → active
- queue delivery: the API's 202 → the jobs consumer invoked (SQS event source);
- execution start: → the reservation's execution started (its history);
- allocator grant: → `Wait for capacity` left (parked, allocator pass, woken);
- provision: → `Provision` left (the disk step, the pod and its objects created);
- pod starts: → the pod Ready in the cluster (kubelet delay + readiness probe);
- readiness detection: → the row made `active` (`launched_at`, written by the `Is the pod
  ready?` call that saw the pod Ready);
- status write: → the API answers `active` (the task's end, the bench's next GET).

cancel → pod gone
- queue delivery: the cancel's 202 → the jobs consumer invoked;
- wake: → the parked `Active until the next checkpoint` left;
- tear down: → the pod deleted (Terminating);
- termination: → the pod gone (the kubelet ends it after its grace period, scaled).

Medians of 10 rounds (min–max beside). Run: `.venv/bin/python bench/lifecycle_latency.py
[ROUNDS] [READY_WATCH_SECONDS]` (part of `make bench`); a watch of 0 checks the pod once per
`Is the pod ready?`, as before 2026-11-24, for comparison.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from cdk_app.declaration import JOBS_CONSUMER
from localcloud.lambdas import Invocation
from localcloud.stack import LocalCloud, Options
from tests.support.api import ApiClient

ROOT = Path(__file__).resolve().parent.parent
KUBELET_SECONDS = 1.0
PROBE_SECONDS = 0.0  # sshd answers as soon as the container runs
TERMINATION_SCALE = 0.02  # our pods' 10 s grace lasts 0.2 s
REPLY_POLL_SECONDS = 0.01
CONSUMER = JOBS_CONSUMER.name

RESERVE_STAGES = (
    "queue delivery",
    "execution start",
    "allocator grant",
    "provision",
    "pod starts",
    "readiness detection",
    "status write",
)
CANCEL_STAGES = ("queue delivery", "wake", "tear down", "termination")


class Recorder:
    """Wall-clock moments: when each function was invoked, and the pod's transitions as
    the cluster's store shows them (watched every 5 ms from a thread)."""

    def __init__(self, cloud: LocalCloud):
        self.invoked: list[tuple[str, float]] = []
        self.pod: dict[str, float] = {}
        self._cloud = cloud
        self._stop = threading.Event()
        original = cloud.lambdas.invoke

        def recording(name: str, event: Any) -> Invocation:
            self.invoked.append((name, time.time()))
            return original(name, event)

        cloud.lambdas.invoke = recording  # type: ignore[method-assign]
        threading.Thread(target=self._watch_pods, daemon=True).start()

    def first_invocation(self, name: str, after: float) -> float:
        return min(at for n, at in self.invoked if n == name and at >= after)

    def _watch_pods(self) -> None:
        assert self._cloud.kubernetes is not None
        store = self._cloud.kubernetes.store
        while not self._stop.wait(0.005):
            pods = store.list("pods", "gpu-dev")["items"]
            if not pods:
                self.pod.setdefault("gone", time.time())
                continue
            self.pod.pop("gone", None)
            for pod in pods:
                if pod["metadata"].get("deletionTimestamp"):
                    self.pod.setdefault("deleted", time.time())
                ready = any(
                    c["type"] == "Ready" and c["status"] == "True"
                    for c in pod["status"].get("conditions") or []
                )
                if ready:
                    self.pod.setdefault("ready", time.time())

    def stop(self) -> None:
        self._stop.set()


def _history(cloud: LocalCloud, reservation_id: str) -> list[dict[str, Any]]:
    assert cloud.aws is not None
    machine = cloud.resources.state_machine_arns["Reservation"]
    arn = f"{machine.replace(':stateMachine:', ':execution:')}:{reservation_id}"
    sfn = cloud.aws.client("stepfunctions")
    events: list[dict[str, Any]] = sfn.get_execution_history(executionArn=arn, maxResults=1000)[
        "events"
    ]
    return events


def _moment(events: list[dict[str, Any]], kind: str, state: str = "", last: bool = False) -> float:
    found = [
        e["timestamp"]
        for e in events
        if e["type"] == kind
        and (
            not state
            or (e.get("stateEnteredEventDetails") or e.get("stateExitedEventDetails") or {}).get(
                "name"
            )
            == state
        )
    ]
    stamp: datetime = found[-1] if last else found[0]
    return stamp.timestamp()


def _wait(condition: Callable[[], Any], timeout: float = 60) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return time.time()
        time.sleep(REPLY_POLL_SECONDS)
    raise AssertionError("timed out")


def one_round(cloud: LocalCloud, api: ApiClient, recorder: Recorder, n: int) -> dict[str, Any]:
    recorder.pod.clear()
    body = {"gpu_type": "t4", "gpu_count": 1, "hours": 1, "github_user": "alice"}
    body["client_request_id"] = f"latency-{n}"
    sent = time.time()
    reply = api.call("POST", "/v1/reservations", body=body)
    accepted = time.time()
    assert reply.status == 202, reply.body
    rid = reply.body["reservation_id"]

    def status() -> str:
        return str(api.call("GET", f"/v1/reservations/{rid}").body["status"])

    active = _wait(lambda: status() == "active")
    launched = datetime.fromisoformat(
        api.call("GET", f"/v1/reservations/{rid}").body["launched_at"]
    ).timestamp()
    events = _history(cloud, rid)
    delivered = recorder.first_invocation(CONSUMER, sent)
    started = _moment(events, "ExecutionStarted")
    granted = _moment(events, "TaskStateExited", "Wait for capacity")
    provisioned = _moment(events, "TaskStateExited", "Provision")
    pod_ready = recorder.pod["ready"]
    reserve = [delivered, started, granted, provisioned, pod_ready, launched, active]

    cancel_sent = time.time()
    cancel_reply = api.call("POST", f"/v1/reservations/{rid}/cancel")
    cancelled = time.time()
    assert cancel_reply.status == 202, cancel_reply.body
    gone = _wait(lambda: "gone" in recorder.pod)
    cancel_delivered = recorder.first_invocation(CONSUMER, cancel_sent)
    _wait(lambda: status() == "cancelled")
    events = _history(cloud, rid)
    woken = _moment(events, "TaskStateExited", "Active until the next checkpoint", last=True)
    cancel = [cancel_delivered, woken, recorder.pod["deleted"], gone]
    return {
        "reserve": _stages(sent, accepted, reserve, RESERVE_STAGES),
        "cancel": _stages(cancel_sent, cancelled, cancel, CANCEL_STAGES),
    }


def _stages(
    sent: float, accepted: float, moments: list[float], names: tuple[str, ...]
) -> dict[str, float]:
    """Each stage from the end of the one before; the first from the request's sending (the
    API sends the job before it answers, so delivery may begin before the 202 arrives). The
    total is from the 202."""
    stages, previous = {"(API answers 202)": accepted - sent}, sent
    for name, moment in zip(names, moments, strict=True):
        stages[name] = moment - previous
        previous = moment
    stages["total"] = moments[-1] - accepted
    return stages


def _print(title: str, rounds: list[dict[str, float]], goal: float) -> None:
    print(f"{title} (median of {len(rounds)}, min–max; goal ≤ {goal:.0f} s)")
    for stage in rounds[0]:
        values = [r[stage] for r in rounds]
        label = "= total" if stage == "total" else f"  {stage}"
        median, low, high = statistics.median(values), min(values), max(values)
        print(f"{label:24} {median:6.2f} s  ({low:.2f}–{high:.2f})")


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    watch = float(sys.argv[2]) if len(sys.argv) > 2 else Options.ready_watch_seconds
    (ROOT / ".local").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-latency-", dir=ROOT / ".local") as tmp:
        Path(tmp).chmod(0o755)
        options = Options(
            tick_seconds=None,  # schedules at their real periods: nothing here relies on them
            kubelet_delay_seconds=KUBELET_SECONDS,
            probe_seconds=PROBE_SECONDS,
            termination_seconds_scale=TERMINATION_SCALE,
            ready_watch_seconds=watch,
        )
        cloud = LocalCloud(Path(tmp), options).start()
        try:
            recorder = Recorder(cloud)
            api = ApiClient.for_cloud(cloud)
            results = [one_round(cloud, api, recorder, n) for n in range(rounds)]
            recorder.stop()
        finally:
            cloud.stop()
    print(
        f"kubelet delay {KUBELET_SECONDS:.1f} s, readiness probe {PROBE_SECONDS:.1f} s, "
        f"pod grace 10 s × {TERMINATION_SCALE} = {10 * TERMINATION_SCALE:.1f} s, free capacity; "
        f"ready poll {options.ready_poll_seconds} s, ready watch {watch:g} s"
    )
    _print("reserve → active", [r["reserve"] for r in results], 3)
    _print("cancel → pod gone", [r["cancel"] for r in results], 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
