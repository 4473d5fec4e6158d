"""What `bench/cost.py` reads off a run of the local cloud: every invocation of its functions
(which, for which reservations, how long), the bytes each logged, and each reservation's
execution history (its state transitions, its state machine log, its disk's volume hours).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cdk_app.declaration import JOBS_CONSUMER
from localcloud.lambdas import Invocation
from localcloud.stack import LocalCloud

# A state machine log record carries, beside the event, the execution's ARN, a timestamp
# and ids (about this many bytes), with `IncludeExecutionData` false.
STATE_LOG_OVERHEAD_BYTES = 250


class Meter:
    """Every invocation of the cloud's functions: which, for which reservations, how long."""

    def __init__(self, cloud: LocalCloud) -> None:
        self.calls: list[tuple[str, list[str], float, str]] = []
        self.records: Counter[str] = Counter()  # jobs per reservation
        self._lock = threading.Lock()
        original = cloud.lambdas.invoke

        def metered(name: str, event: Any) -> Invocation:
            began = time.perf_counter()
            result = original(name, event)
            seconds = time.perf_counter() - began
            ids = _reservations_of(event)
            with self._lock:
                self.calls.append((name, ids, seconds, result.request_id))
                if name == JOBS_CONSUMER.name:
                    self.records.update(ids)
            return result

        cloud.lambdas.invoke = metered  # type: ignore[method-assign]


def _reservations_of(event: Any) -> list[str]:
    if not isinstance(event, dict):
        return []
    if "reservation_id" in event:
        return [str(event["reservation_id"])]
    detail = event.get("detail")
    if isinstance(detail, dict) and "reservation_id" in detail:  # a bus event (the notifier)
        return [str(detail["reservation_id"])]
    found = []
    for record in event.get("Records") or []:  # a batch of jobs
        try:
            found.append(str(json.loads(record.get("body") or "{}").get("reservation_id")))
        except ValueError:
            continue
    return found


@contextmanager
def captured_output(path: Path) -> Iterator[None]:
    """The process's stdout and stderr into `path` (the functions' logs go there)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with path.open("wb") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def log_bytes_by_request(path: Path) -> tuple[dict[str, int], dict[str, set[str]]]:
    """Bytes logged per Lambda request id; and per function, the statistics it logs (each
    a metric of the scheduled reconcilers)."""
    sizes: dict[str, int] = defaultdict(int)
    statistics_of: dict[str, set[str]] = defaultdict(set)
    for line in path.read_bytes().splitlines():
        if not line.startswith(b"{"):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or "function_request_id" not in record:
            continue
        sizes[record["function_request_id"]] += len(line) + 1
        if isinstance(record.get("statistics"), dict):
            statistics_of[record["function_name"]].update(record["statistics"])
    return sizes, statistics_of


def _execution(cloud: LocalCloud, reservation_id: str) -> str:
    machine = cloud.resources.state_machine_arns["Reservation"]
    return f"{machine.replace(':stateMachine:', ':execution:')}:{reservation_id}"


def wait_until_finished(cloud: LocalCloud, reservation_ids: list[str], timeout: float) -> None:
    """Until every reservation's execution has ended: a reservation is `expired` at its
    tear down, before its disk is saved and freed."""
    assert cloud.aws is not None
    sfn = cloud.aws.client("stepfunctions")
    deadline = time.monotonic() + timeout
    for reservation_id in reservation_ids:
        arn = _execution(cloud, reservation_id)
        while sfn.describe_execution(executionArn=arn)["status"] == "RUNNING":
            assert time.monotonic() < deadline, f"{reservation_id}: execution still running"
            time.sleep(0.5)


def history(cloud: LocalCloud, reservation_id: str) -> list[dict[str, Any]]:
    assert cloud.aws is not None
    arn = _execution(cloud, reservation_id)
    sfn = cloud.aws.client("stepfunctions")
    events: list[dict[str, Any]] = []
    token: dict[str, str] = {}
    while True:
        page = sfn.get_execution_history(executionArn=arn, maxResults=1000, **token)
        events += page["events"]
        if not page.get("nextToken"):
            return events
        token = {"nextToken": page["nextToken"]}


def transitions(events: list[dict[str, Any]]) -> int:
    """States entered, and each retried attempt (a TaskScheduled beyond a state's first)."""
    entered = sum(1 for e in events if e["type"].endswith("StateEntered"))
    scheduled = sum(1 for e in events if e["type"] == "TaskScheduled")
    tasks = sum(1 for e in events if e["type"] == "TaskStateEntered")
    return entered + max(0, scheduled - tasks)


def state_log_bytes(events: list[dict[str, Any]]) -> int:
    total = 0
    for event in events:
        details = {
            k: (
                {x: y for x, y in v.items() if x not in ("input", "output")}
                if isinstance(v, dict)
                else v
            )
            for k, v in event.items()
        }
        total += len(json.dumps(details, default=str)) + STATE_LOG_OVERHEAD_BYTES
    return total


def volume_hours(events: list[dict[str, Any]], seconds_per_hour: float) -> float:
    """Clock hours from `Take the disk` left to `Free the disk` left."""

    def left(state: str) -> float | None:
        for event in events:
            details = event.get("stateExitedEventDetails") or {}
            if event["type"].endswith("StateExited") and details.get("name") == state:
                return float(event["timestamp"].timestamp())
        return None

    taken, freed = left("Take the disk"), left("Free the disk")
    if taken is None or freed is None:
        return 0.0
    return (freed - taken) / seconds_per_hour
