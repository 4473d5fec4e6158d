"""Every state waits out a transient outage (issue #30 item 1): an outage of 3 clock minutes
(1.8 s here; `localcloud/fault_control.py` `CloudFaults`) begins the moment a state's task is
first invoked, and the reservation goes on as if nothing happened: the submit, every state
from `Validate request` to `Is the pod ready?`, tear down, saving and freeing a disk. A
queued reservation keeps its place through an outage; a permanent error still fails at once.

The outage starts at the Lambda boundary, where moto invokes our function: the first
invocation of the named task (or of the jobs consumer) injects the fault and is then served,
so that invocation and its retries meet the outage."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest

from localcloud.kubernetes.errors import ApiError
from localcloud.lambdas import Invocation
from localcloud.stack import LocalCloud
from tests.lifecycle.conftest import MINUTE
from tests.lifecycle.helpers import (
    cancel,
    execution_history,
    h100s_full_and_one_queued,
    reserve,
    show,
)
from tests.support.api import ApiClient
from tests.support.waiting import wait_for

OUTAGE_SECONDS = 3 * MINUTE  # 3 clock minutes: past the 2 minutes the old retries covered
FAILURE_STATES = ("Record the failure", "Tear down failed", "Disk not saved")


@dataclass
class Trigger:
    """Injects `fault` when `function` is first invoked for `task` (None: any event)."""

    cloud: LocalCloud
    function: str
    task: str | None
    fault: str
    service: str | None = None  # the AWS service an aws-throttle throttles
    fired: threading.Event = field(default_factory=threading.Event)
    lines: list[str] = field(default_factory=list)  # status lines seen during the outage

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def invoke(self, inner: Any, name: str, event: Any) -> Invocation:
        if name == self.function and self._matches(event):
            with self._lock:
                first = not self.fired.is_set()
                self.fired.set()
            if first:
                assert self.cloud.faults is not None
                self.cloud.faults.inject(self.fault, OUTAGE_SECONDS, self.service)
        return inner.invoke(name, event)  # type: ignore[no-any-return]

    def _matches(self, event: Any) -> bool:
        if self.task is None:
            return True
        payload = json.loads(event) if isinstance(event, str | bytes) else event
        return isinstance(payload, dict) and payload.get("task") == self.task


@contextmanager
def outage_at(cloud: LocalCloud, function: str, task: str | None, fault: str) -> Iterator[Trigger]:
    trigger = Trigger(cloud, function, task, fault, "ec2" if fault == "aws-throttle" else None)
    inner = cloud.functions

    class Wrapped:
        def invoke(self, name: str, event: Any) -> Invocation:
            return trigger.invoke(inner, name, event)

    cloud.functions = Wrapped()
    try:
        yield trigger
    finally:
        cloud.functions = inner


def _watch_lines(api: ApiClient, rid: str, trigger: Trigger) -> None:
    """The status lines the API shows while the outage lasts (the database may be out)."""
    trigger.fired.wait(20)
    until = time.monotonic() + OUTAGE_SECONDS + 1
    while time.monotonic() < until:
        try:
            reply = api.call("GET", f"/v1/reservations/{rid}", profile="alice")
        except Exception:  # the test ended (the cloud stopping) or the API out: stop looking
            return
        if reply.status == 200 and reply.body.get("current_detailed_status"):
            trigger.lines.append(str(reply.body["current_detailed_status"]))
        time.sleep(0.05)


def wait_for_status(
    api: ApiClient, rid: str, status: str, timeout: float = 30, profile: str = "alice"
) -> dict[str, Any]:
    """The reservation once it has `status`; the API's 503s while its own database
    connections recover from an outage are waited through, as a user's CLI would."""

    def view() -> dict[str, Any] | None:
        reply = api.call("GET", f"/v1/reservations/{rid}", profile=profile)
        if reply.status == 503:
            return None
        assert reply.status == 200, reply.body
        return dict(reply.body) if reply.body["status"] == status else None

    found: dict[str, Any] = wait_for(view, timeout=timeout, message=f"{rid[:8]} {status}")
    return found


def _survived(cloud: LocalCloud, rid: str, trigger: Trigger) -> list[str]:
    assert trigger.fired.is_set(), "the outage never began: the task was not invoked"
    history = execution_history(cloud, rid)
    assert not [s for s in FAILURE_STATES if s in history], history
    return history


def _disk(cloud: LocalCloud) -> str:
    name = f"out-{uuid.uuid4().hex[:6]}"
    with psycopg.connect(cloud.database_url) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn) VALUES"
            " ('alice', 'arn:aws:iam::123456789012:user/alice') ON CONFLICT DO NOTHING"
        )
        conn.execute("INSERT INTO disks (user_id, disk_name) VALUES ('alice', %s)", (name,))
    return name


def _disk_free(cloud: LocalCloud, name: str) -> bool:
    try:
        with psycopg.connect(cloud.database_url) as conn:
            row = conn.execute(
                "SELECT reservation_id IS NULL FROM disks WHERE disk_name = %s", (name,)
            ).fetchone()
    except psycopg.OperationalError:  # the outage: ours too
        return False
    return bool(row and row[0])


# Before the reservation is active: it becomes active as if nothing happened.
BEFORE_ACTIVE = [
    ("ReservationTasks", "start", "database-outage"),  # Validate request
    ("ReservationTasks", "wait_for_capacity", "database-outage"),  # the grant's park
    ("ReservationTasks", "take_disk", "database-outage"),
    ("ReservationTasks", "take_disk", "aws-throttle"),  # EC2 throttled (a named disk)
    ("ReservationTasks", "provision", "kubernetes-outage"),
    ("ReservationTasks", "check_ready", "kubernetes-outage"),
    ("ReservationTasks", "check_ready", "database-outage"),
]


@pytest.mark.parametrize(
    ("function", "task", "fault"),
    BEFORE_ACTIVE,
    ids=[f"{t}-{f}" for _, t, f in BEFORE_ACTIVE],
)
def test_a_three_minute_outage_before_active_is_waited_out(
    api: ApiClient, local_cloud: LocalCloud, function: str, task: str | None, fault: str
) -> None:
    fields: dict[str, Any] = {"gpu_type": "cpu-x86", "gpu_count": 0}
    if task == "take_disk":
        fields["disk_name"] = _disk(local_cloud)
    with outage_at(local_cloud, function, task, fault) as trigger:
        rid = str(reserve(api, **fields)["reservation_id"])
        watcher = threading.Thread(target=_watch_lines, args=(api, rid, trigger), daemon=True)
        watcher.start()
        wait_for_status(api, rid, "active", timeout=60)
        watcher.join(10)
    history = _survived(local_cloud, rid, trigger)
    assert "Checkpoint: warnings, changes, expiry" in history
    if fault == "kubernetes-outage":
        # the status line said why it waited, and says what it did before once it is over
        assert any(line.startswith("waiting for the Kubernetes API; ") for line in trigger.lines)
    assert not show(api, rid)["current_detailed_status"].startswith("waiting for the ")
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled", timeout=30)


@pytest.mark.parametrize(
    ("fault", "service"), [("database-outage", None), ("aws-throttle", "states")]
)
def test_a_three_minute_outage_at_submit_is_waited_out(
    api: ApiClient, local_cloud: LocalCloud, fault: str, service: str | None
) -> None:
    """The create job meets the outage in the jobs consumer (the database, or Step
    Functions throttling StartExecution): a failed job comes back after the fault-retry wait
    (2 clock minutes), not the queue's 180 s visibility timeout."""
    assert local_cloud.faults is not None
    poller = local_cloud.pollers["Jobs"]
    poller.pause()
    try:
        rid = str(reserve(api, gpu_type="cpu-x86", gpu_count=0)["reservation_id"])
        local_cloud.faults.inject(fault, OUTAGE_SECONDS, service)
    finally:
        poller.paused = False
    wait_for_status(api, rid, "active", timeout=60)
    history = execution_history(local_cloud, rid)
    assert not [s for s in FAILURE_STATES if s in history], history
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled", timeout=30)


@pytest.mark.parametrize(
    ("task", "fault"),
    [
        ("tear_down", "kubernetes-outage"),
        ("tear_down", "database-outage"),
        ("save_disk", "database-outage"),
        ("release_disk", "database-outage"),
    ],
)
def test_a_three_minute_outage_at_the_end_is_waited_out_and_the_disk_saved(
    api: ApiClient, local_cloud: LocalCloud, task: str, fault: str
) -> None:
    disk = _disk(local_cloud)
    rid = str(reserve(api, gpu_type="cpu-x86", gpu_count=0, disk_name=disk)["reservation_id"])
    wait_for_status(api, rid, "active", timeout=60)
    with outage_at(local_cloud, "ReservationTasks", task, fault) as trigger:
        cancel(api, rid)
        wait_for(lambda: _disk_free(local_cloud, disk), timeout=60, message="disk saved, freed")
    assert wait_for_status(api, rid, "cancelled", timeout=30)["failure_reason"] == (
        "cancelled by the user"
    )
    _survived(local_cloud, rid, trigger)


def test_a_queued_reservation_keeps_its_place_through_an_outage(
    api: ApiClient, local_cloud: LocalCloud
) -> None:
    first, second, queued = h100s_full_and_one_queued(api)
    behind = reserve(api, gpu_type="h100", gpu_count=8, profile="bob")["reservation_id"]
    wait_for_status(api, behind, "queued", profile="bob")
    assert local_cloud.faults is not None
    for fault in ("database-outage", "kubernetes-outage"):
        local_cloud.faults.inject(fault, OUTAGE_SECONDS)
        time.sleep(OUTAGE_SECONDS + 0.5)
    for rid in (queued, behind):
        view = wait_for_status(api, rid, "queued", profile="bob")
        assert not [s for s in FAILURE_STATES if s in execution_history(local_cloud, rid)]
    # Their places as the allocator's next pass after the outage writes them.
    for rid, place in ((queued, 1), (behind, 2)):
        wait_for(
            lambda rid=rid, place=place: show(api, rid, profile="bob")["queue_position"] == place,
            message=f"{rid[:8]} at place {place}",
        )
    cancel(api, first)  # a node frees: the first in the queue gets it
    wait_for_status(api, queued, "active", timeout=30, profile="bob")
    view = wait_for_status(api, behind, "queued", profile="bob")
    assert view["queue_position"] == 1
    for rid, profile in ((second, "alice"), (queued, "bob"), (behind, "bob")):
        cancel(api, rid, profile=profile)


def test_a_permanent_error_still_fails_at_once(api: ApiClient, local_cloud: LocalCloud) -> None:
    """A pod the API refuses as invalid (422) is not an outage: no retry, the failure path."""
    assert local_cloud.kubernetes is not None
    faults = local_cloud.kubernetes.faults
    original = type(faults).apply
    refused: list[str] = []

    def apply(verb: str, resource: str) -> None:
        if verb == "create" and resource == "pods" and not refused:
            refused.append(resource)
            raise ApiError(422, "Invalid", "injected: Pod is invalid")
        original(faults, verb, resource)

    faults.apply = apply  # type: ignore[method-assign]
    try:
        started = time.monotonic()
        rid = str(reserve(api, gpu_type="cpu-x86", gpu_count=0)["reservation_id"])
        view = wait_for_status(api, rid, "failed", timeout=30)
        elapsed = time.monotonic() - started
    finally:
        faults.__dict__.pop("apply", None)
    assert "Permanent" in view["failure_reason"] and "422" in view["failure_reason"], view
    assert elapsed < 2 * MINUTE + 2, elapsed  # no outage's worth of retries
    assert "Record the failure" in execution_history(local_cloud, rid)
