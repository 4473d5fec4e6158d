"""The fault campaign (issue #12, "Tests"): faults injected in provisioning, while active,
in tear down, in the jobs queue and by an operator, one case each, on the lifecycle's local
cloud (1 h = 36 s, every retry wait 1 s).

Faults: Kubernetes 500s (`faults.fail_next`) and timeouts (a request held beyond the
client's timeout, lowered to 1.5 s for this module: the server still does the work after
the client gave up, so a timeout is also "a response lost after the side effect"); the
stand-in unreachable (every request held beyond the timeout) for 3 s = 5 clock minutes; the
functions' database connections killed (`pg_terminate_backend`) over and over for 2 s, so
tasks lose them mid-statement; throttled `SendTaskSuccess`; duplicate and out-of-order jobs;
`StopExecution` followed by a sweep.

For every case, once its reservations have ended: nothing labelled with them is left, no
slot is held by them, each ended with a reason; a reservation active when a transient fault
hit is still active afterwards (checked in the case). The table of faults and outcomes is
printed at the end of the module (and each case's row is a junit property)."""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest

from localcloud.stack import LocalCloud
from tests.lifecycle.helpers import (
    STOPPED_REASON,
    allocated_slots,
    assert_nothing_left,
    cancel,
    execution_history,
    objects_of,
    reserve,
    secret_data,
    show,
    stop_execution,
    sweep,
    task_token,
    throttled_send_task_success,
    wait_for_status,
)
from tests.support.api import ApiClient
from tests.support.waiting import wait_for

CLIENT_TIMEOUT_SECONDS = 1.5  # the layer's Kubernetes client, for this module only
HELD_SECONDS = 2.5  # a request held this long has timed out for the client
OUTAGE_SECONDS = 3.0  # 5 minutes of the compressed clock
DB_KILL_SECONDS = 1.5
ENDED = ("expired", "cancelled", "failed")
FAILED_STATES = ("Record the failure", "Tear down")
SPARED = "fault-campaign"  # application_name of our own connections: never killed


@dataclass
class Row:
    phase: str
    fault: str
    outcome: str = ""
    seconds: float = 0.0


RESULTS: list[Row] = []


@pytest.fixture(scope="module", autouse=True)
def short_kubernetes_timeout(local_cloud: LocalCloud) -> Iterator[None]:
    """The layer's client times out after 1.5 s here (10 s by default), so a held request
    is a timeout within a case's few seconds."""
    with kubernetes_timeout(CLIENT_TIMEOUT_SECONDS):
        yield


@pytest.fixture(scope="module", autouse=True)
def fault_table(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    lines = [
        "",
        "fault campaign: fault -> outcome",
        f"{'phase':<12} {'fault':<66} {'s':>5}  outcome",
    ]
    lines += [f"{r.phase:<12} {r.fault:<66} {r.seconds:5.1f}  {r.outcome}" for r in RESULTS]
    lines.append(f"{len(RESULTS)} faults")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else nullcontext():
        for line in lines:
            if reporter is not None:
                reporter.write_line(line)
            else:  # pragma: no cover
                print(line)


# -- fault tools --------------------------------------------------------------------------


def hold_next(cloud: LocalCloud, verb: str, resource: str, count: int = 1) -> list[int]:
    """The next `count` requests of a verb on a resource are held beyond the client's
    timeout, then served: the client sees a timeout, the change is made anyway. Returns the
    list of held requests' numbers (grows as they are hit)."""
    assert cloud.kubernetes is not None
    faults = cloud.kubernetes.faults
    original = type(faults).apply
    held: list[int] = []
    lock = threading.Lock()

    def apply(verb_: str, resource_: str) -> None:
        with lock:
            hit = verb_ == verb and resource_ == resource and len(held) < count
            if hit:
                held.append(len(held))
        if hit:
            time.sleep(HELD_SECONDS)
        original(faults, verb_, resource_)

    faults.apply = apply  # type: ignore[method-assign,assignment]
    return held


def gate_next(cloud: LocalCloud, verb: str, resource: str) -> tuple[threading.Event, list[int]]:
    """The next request of a verb on a resource waits until the returned event is set, then
    is served; the list says whether it has arrived."""
    assert cloud.kubernetes is not None
    faults = cloud.kubernetes.faults
    original = type(faults).apply
    gate = threading.Event()
    arrived: list[int] = []
    lock = threading.Lock()

    def apply(verb_: str, resource_: str) -> None:
        with lock:
            hit = verb_ == verb and resource_ == resource and not arrived
            if hit:
                arrived.append(1)
        if hit:
            gate.wait(30)
        original(faults, verb_, resource_)

    faults.apply = apply  # type: ignore[method-assign,assignment]
    return gate, arrived


@contextmanager
def kubernetes_timeout(seconds: float) -> Iterator[None]:
    """The layer's Kubernetes client times out after `seconds`; as it was, on leaving."""
    from gpudev.cluster.eks import reset_cluster_api_client
    from gpudev.settings import cluster_settings

    before = os.environ.get("KUBERNETES_TIMEOUT_SECONDS")
    os.environ["KUBERNETES_TIMEOUT_SECONDS"] = str(seconds)
    cluster_settings.cache_clear()
    reset_cluster_api_client()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("KUBERNETES_TIMEOUT_SECONDS", None)
        else:
            os.environ["KUBERNETES_TIMEOUT_SECONDS"] = before
        cluster_settings.cache_clear()
        reset_cluster_api_client()


def release_holds(cloud: LocalCloud) -> None:
    assert cloud.kubernetes is not None
    cloud.kubernetes.faults.__dict__.pop("apply", None)


@contextmanager
def unreachable(cloud: LocalCloud) -> Iterator[None]:
    """Every request to the stand-in is held beyond the client's timeout while inside."""
    assert cloud.kubernetes is not None
    cloud.kubernetes.faults.delay_seconds = HELD_SECONDS
    try:
        yield
    finally:
        cloud.kubernetes.faults.delay_seconds = 0.0


def outage(cloud: LocalCloud, seconds: float = OUTAGE_SECONDS) -> None:
    with unreachable(cloud):
        time.sleep(seconds)


def kill_database_connections(cloud: LocalCloud, seconds: float = DB_KILL_SECONDS) -> int:
    """Terminate every connection of the cloud's database but ours, again and again for
    `seconds`: connections in use die mid-statement. Returns how many were killed."""
    killed = 0
    deadline = time.monotonic() + seconds
    with psycopg.connect(cloud.database_url, autocommit=True, application_name=SPARED) as conn:
        while time.monotonic() < deadline:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " AND application_name <> %s AND backend_type = 'client backend'",
                (SPARED,),
            ).fetchall()
            killed += sum(1 for (done,) in rows if done)
            time.sleep(0.02)
    return killed


def send_job(cloud: LocalCloud, kind: str, rid: str, **extra: Any) -> None:
    assert cloud.aws is not None
    body = {"kind": kind, "reservation_id": rid, "user_id": "alice", **extra}
    cloud.aws.client("sqs").send_message(
        QueueUrl=cloud.resources.queue_urls["Jobs"], MessageBody=json.dumps(body)
    )


def generation(cloud: LocalCloud, rid: str) -> int:
    with psycopg.connect(cloud.database_url, application_name=SPARED) as conn:
        row = conn.execute(
            "SELECT change_generation FROM reservations WHERE reservation_id = %s", (rid,)
        ).fetchone()
    assert row
    return int(row[0])


# -- a case's context ---------------------------------------------------------------------


@dataclass
class Run:
    api: ApiClient
    cloud: LocalCloud
    reservations: list[str] = field(default_factory=list)
    unavailable: int = 0  # API answers 503 seen (database faults)

    def reserve(self, **fields: Any) -> str:
        body = {"gpu_type": "cpu-x86", "gpu_count": 0, "hours": 1, **fields}
        rid = str(reserve(self.api, **body)["reservation_id"])
        self.reservations.append(rid)
        return rid

    def active(self, **fields: Any) -> str:
        """A reservation that is active and parked until its next checkpoint."""
        (rid,) = self.all_active(1, **fields)
        return rid

    def all_active(self, count: int, **fields: Any) -> list[str]:
        """`count` reservations, reserved together, each active and parked."""
        rids = [self.reserve(**fields) for _ in range(count)]
        for rid in rids:
            wait_for_status(self.api, rid, "active")
            wait_for(functools.partial(self.parked, rid), timeout=10)
        return rids

    def parked(self, rid: str) -> bool:
        return "Active until the next checkpoint" in self.history(rid)

    def history(self, rid: str) -> list[str]:
        return execution_history(self.cloud, rid)

    def show(self, rid: str) -> dict[str, Any]:
        """The reservation as the API shows it; a 503 (the API's own database connections
        recovering from a fault) is retried for up to 20 s and counted."""
        deadline = time.monotonic() + 20
        while True:
            reply = self.api.call("GET", f"/v1/reservations/{rid}", profile="alice")
            if reply.status != 503 or time.monotonic() > deadline:
                assert reply.status == 200, reply.body
                return dict(reply.body)
            self.unavailable += 1
            time.sleep(0.2)

    def wait(self, rid: str, statuses: tuple[str, ...], timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while (view := self.show(rid))["status"] not in statuses:
            assert time.monotonic() < deadline, (
                f"{rid[:8]} is {view['status']} ({view['current_detailed_status']}),"
                f" not {statuses} after {timeout} s"
            )
            time.sleep(0.1)
        return view

    def status(self, rid: str) -> str:
        return str(self.show(rid)["status"])

    def still_active(self, rid: str) -> str:
        """The reservation survived the fault: active, and never went to a failure path."""
        assert self.status(rid) == "active"
        history = self.history(rid)
        assert not [s for s in FAILED_STATES if s in history], history
        return "still active"

    def expiry(self, rid: str) -> str:
        (control,) = [
            c
            for c in objects_of(self.cloud, rid)["configmaps"]
            if c["metadata"]["name"].endswith("-control")
        ]
        return str(control["data"]["expires_at"])

    def extend(self, rid: str) -> str:
        """Extend by an hour and wait until the ConfigMap shows it (returns the outcome)."""
        before = self.expiry(rid)
        reply = self.api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": 1})
        assert reply.status == 202, reply.body
        wait_for(lambda: self.expiry(rid) != before, timeout=30, message="extension applied")
        return "extension applied"

    def ended(self, rid: str, status: str = "cancelled", timeout: float = 40) -> str:
        view = self.wait(rid, ENDED, timeout=timeout)
        assert view["status"] == status, view
        return f"{status}: {view.get('failure_reason') or view.get('current_detailed_status')}"

    def finish(self) -> None:
        """End what is still live, then check every reservation of the case."""
        for rid in self.reservations:
            if self.status(rid) not in ENDED:
                cancel(self.api, rid)
        for rid in self.reservations:
            view = self.wait(rid, ENDED, timeout=40)
            assert view["reservation_ended"], view
            reason = view.get("failure_reason") or view.get("current_detailed_status")
            assert reason, f"{rid[:8]} ended {view['status']} without a reason"
            assert_nothing_left(self.cloud, rid)
            assert allocated_slots(self.cloud, rid) == 0


@dataclass(frozen=True)
class Case:
    phase: str
    fault: str | tuple[str, ...]  # several: injected together, one row each in the table
    run: Callable[[Run], str]
    xfail: str | None = None

    @property
    def faults(self) -> tuple[str, ...]:
        return (self.fault,) if isinstance(self.fault, str) else self.fault


# -- provisioning ------------------------------------------------------------------------


CREATED = ("networkpolicies", "configmaps", "secrets", "services", "pods")
DELETED = ("pods", "services", "configmaps", "secrets", "networkpolicies")


def _creates_fail_twice(r: Run) -> str:
    """Every kind Provision creates answers 500 twice (the pods' after the services were
    created): five reservations provision at once through the ten failures."""
    faults = r.cloud.kubernetes.faults  # type: ignore[union-attr]
    for resource in CREATED:
        faults.fail_next("create", resource, 2)
    rids = [r.reserve(gpu_type="t4", gpu_count=1) for _ in CREATED]
    for rid in rids:
        r.wait(rid, ("active",), timeout=30)
    return f"{len(rids)} reservations provisioning at once: all active after retries"


def _pods_never_created(r: Run) -> str:
    r.cloud.kubernetes.faults.fail_next("create", "pods", 1000)  # type: ignore[union-attr]
    rid = r.reserve()
    # 86 attempts (the 30-minute outage limit) at up to 1 s each here: about 45 s
    return r.ended(rid, "failed", timeout=150)


def _pod_create_times_out(r: Run) -> str:
    held = hold_next(r.cloud, "create", "pods")
    rid = r.reserve()
    wait_for_status(r.api, rid, "active", timeout=30)
    assert held, "the create was held"
    assert len(objects_of(r.cloud, rid)["pods"]) == 1, "the late pod was adopted, not doubled"
    return "active; the pod created after the timeout adopted"


def _secret_create_times_out(r: Run) -> str:
    """The keys Secret is made, its answer lost: the retried provision makes a new Jupyter
    token and host key, whose create changes nothing (the Secret is ours already). The row
    must record what the pod was given (the first try's), or the URL's token and the key the
    CLI pins would both be wrong."""
    gate, arrived = gate_next(r.cloud, "create", "secrets")
    rid = r.reserve(jupyter=True)
    wait_for(lambda: arrived, timeout=20, message="the Secret's create")
    # served after the client gave up, before the retry (1 s after the timeout) creates it
    time.sleep(CLIENT_TIMEOUT_SECONDS + 0.3)
    gate.set()
    wait_for_status(r.api, rid, "active", timeout=30)
    keys = secret_data(objects_of(r.cloud, rid)["secrets"][0])
    shown = wait_for(lambda: (s := show(r.api, rid))["jupyter_url"] and s, timeout=20)
    assert shown["ssh_host_keys"] == [keys["ssh_host_ed25519_key.pub"].strip()]
    assert shown["jupyter_url"].endswith(f"?token={keys['jupyter_token']}")
    return "active; the row records the host key and token of the Secret the pod mounts"


def _readiness_list_fails(r: Run) -> str:
    r.cloud.kubernetes.faults.fail_next("list", "pods", 3)  # type: ignore[union-attr]
    rid = r.reserve()
    wait_for_status(r.api, rid, "active", timeout=30)
    return "active after retries"


def _outage_while_provisioning(r: Run) -> str:
    with unreachable(r.cloud):
        rid = r.reserve()
        time.sleep(OUTAGE_SECONDS)
    wait_for_status(r.api, rid, "active", timeout=40)
    return "active after the outage"


def _database_killed_while_provisioning(r: Run) -> str:
    rid = r.reserve()
    time.sleep(0.3)  # the create job is taken, the execution starts
    killed = kill_database_connections(r.cloud)
    r.wait(rid, ("active",), timeout=40)
    return f"active ({killed} connections killed, {r.unavailable} API 503s after)"


# -- active ------------------------------------------------------------------------------


def _checkpoint_replace_fails(resource: str, count: int) -> Callable[[Run], str]:
    def run(r: Run) -> str:
        rid = r.active()
        faults = r.cloud.kubernetes.faults  # type: ignore[union-attr]
        if resource == "secrets":
            faults.fail_next("replace", resource, count)
            before = generation(r.cloud, rid)
            reply = r.api.call(
                "POST", f"/v1/reservations/{rid}/users", body={"github_username": "octocat"}
            )
            assert reply.status == 202, reply.body
            wait_for(
                lambda: any(
                    "user.gh-octocat" in secret_data(s) for s in objects_of(r.cloud, rid)["secrets"]
                ),
                timeout=30,
                message="the user's keys in the Secret",
            )
            assert generation(r.cloud, rid) == before + 1
            outcome = "user added"
        else:
            faults.fail_next("replace", resource, count)
            outcome = r.extend(rid)
        return f"{r.still_active(rid)}, {outcome}"

    return run


def _checkpoint_replace_times_out(r: Run) -> str:
    rid = r.active()
    held = hold_next(r.cloud, "replace", "configmaps")
    outcome = r.extend(rid)
    assert held
    time.sleep(1)  # the retried checkpoint parks again
    return f"{r.still_active(rid)}, {outcome}"


def _outage_while_active(r: Run) -> str:
    rid = r.active()
    before = r.expiry(rid)
    reply = r.api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": 1})
    assert reply.status == 202, reply.body
    outage(r.cloud)
    wait_for(lambda: r.expiry(rid) != before, timeout=40, message="extension applied")
    return f"{r.still_active(rid)}, extension applied"


def _database_killed_while_active(r: Run) -> str:
    rid = r.active()
    before = r.expiry(rid)
    reply = r.api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": 1})
    assert reply.status == 202, reply.body
    time.sleep(0.2)
    killed = kill_database_connections(r.cloud)
    wait_for(lambda: r.expiry(rid) != before, timeout=40, message="extension applied")
    return (
        f"{r.still_active(rid)}, extension applied"
        f" ({killed} connections killed, {r.unavailable} API 503s after)"
    )


def _throttled_wake_for_a_change(r: Run) -> str:
    rid = r.active(hours=0.6)  # its next checkpoint is seconds away
    before = r.expiry(rid)
    with throttled_send_task_success(task_token(r.cloud, rid)) as refused:
        reply = r.api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": 1})
        assert reply.status == 202, reply.body
        # The job fails (back on the queue in 180 s); the next checkpoint applies it.
        wait_for(lambda: r.expiry(rid) != before, timeout=40, message="extension applied")
    assert refused
    return f"{r.still_active(rid)}, extension applied at the next checkpoint"


# -- tear down ---------------------------------------------------------------------------


def _tear_down_deletes_fail(r: Run) -> str:
    """Every kind tear down deletes answers 500 twice, and its label lists of pods three
    times: six reservations cancelled at once tear down through the failures."""
    rids = r.all_active(4, gpu_type="t4", gpu_count=1)
    rids += r.all_active(2)  # cpu-x86
    faults = r.cloud.kubernetes.faults  # type: ignore[union-attr]
    for resource in DELETED:
        faults.fail_next("delete", resource, 2)
    faults.fail_next("list", "pods", 3)
    for rid in rids:
        cancel(r.api, rid)
    outcomes = {r.ended(rid) for rid in rids}
    return f"{len(rids)} reservations cancelled at once: " + " | ".join(sorted(outcomes))


def _tear_down_delete_times_out(r: Run) -> str:
    rid = r.active()
    held = hold_next(r.cloud, "delete", "pods")
    cancel(r.api, rid)
    outcome = r.ended(rid)
    assert held
    return outcome


def _outage_in_tear_down(r: Run) -> str:
    rid = r.active()
    with unreachable(r.cloud):
        cancel(r.api, rid)
        time.sleep(OUTAGE_SECONDS)
    return r.ended(rid)


def _database_killed_in_tear_down(r: Run) -> str:
    rid = r.active()
    cancel(r.api, rid)
    time.sleep(0.1)
    killed = kill_database_connections(r.cloud)
    outcome = r.ended(rid)
    return f"{outcome} ({killed} connections killed, {r.unavailable} API 503s after)"


def _throttled_wake_for_a_cancel(r: Run) -> str:
    rid = r.active(hours=0.6)  # its next checkpoint is seconds away
    with throttled_send_task_success(task_token(r.cloud, rid)) as refused:
        cancel(r.api, rid)
        outcome = r.ended(rid)
    assert refused
    return f"{outcome} (at the next checkpoint)"


# -- jobs --------------------------------------------------------------------------------


def _paused_jobs(r: Run) -> None:
    r.cloud.pollers["Jobs"].pause()  # returns once a long poll in flight has finished


def _resume_jobs(r: Run) -> None:
    r.cloud.pollers["Jobs"].paused = False


def _executions_named(r: Run, rid: str) -> int:
    assert r.cloud.aws is not None
    sfn = r.cloud.aws.client("stepfunctions")
    machine = r.cloud.resources.state_machine_arns["Reservation"]
    names = [e["name"] for e in sfn.list_executions(stateMachineArn=machine)["executions"]]
    return names.count(rid)


def _duplicate_create_while_active(r: Run) -> str:
    rid = r.active()
    send_job(r.cloud, "create_reservation", rid)
    time.sleep(1.5)
    assert _executions_named(r, rid) == 1
    assert len(objects_of(r.cloud, rid)["pods"]) == 1
    return f"{r.still_active(rid)}, one execution, one pod"


def _cancel_before_create(r: Run) -> str:
    assert r.cloud.aws is not None
    _paused_jobs(r)
    try:
        rid = r.reserve()
        cancel(r.api, rid)
        r.cloud.aws.client("sqs").purge_queue(QueueUrl=r.cloud.resources.queue_urls["Jobs"])
        send_job(r.cloud, "cancel_reservation", rid)
        send_job(r.cloud, "create_reservation", rid)
    finally:
        _resume_jobs(r)
    outcome = r.ended(rid)
    assert "Provision" not in r.history(rid)
    return outcome + ", never provisioned"


def _duplicate_cancel(r: Run) -> str:
    rid = r.active()
    cancel(r.api, rid)
    send_job(r.cloud, "cancel_reservation", rid)
    send_job(r.cloud, "cancel_reservation", rid)
    outcome = r.ended(rid)
    time.sleep(1)
    assert r.history(rid).count("Tear down") == 1
    return outcome + ", torn down once"


def _duplicate_change(r: Run) -> str:
    rid = r.active()
    before = r.expiry(rid)
    reply = r.api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": 1})
    assert reply.status == 202, reply.body
    send_job(r.cloud, "reservation_changed", rid, change_generation=generation(r.cloud, rid))
    wait_for(lambda: r.expiry(rid) != before, timeout=30, message="extension applied")
    time.sleep(1.5)
    expires = show(r.api, rid)["expires_at"]
    assert show(r.api, rid)["duration_hours"] == 2, "extended once"
    return f"{r.still_active(rid)}, extended once (expires {expires})"


# -- operator ----------------------------------------------------------------------------


def _stopped_by_an_operator(r: Run) -> str:
    rid = r.active(hours=0.6)
    stop_execution(r.cloud, rid)
    swept = sweep(r.cloud)
    assert swept["statistics"]["reservations_ended"] == 1, swept
    view = show(r.api, rid)
    assert view["status"] == "failed" and STOPPED_REASON.fullmatch(view["failure_reason"])
    return "failed by the sweeper: " + str(view["failure_reason"])


def _sweep_overlapping_a_tear_down(r: Run) -> str:
    """A sweep lists the objects, a tear down then deletes them and ends the row, and the
    sweep reads the rows: the sweeper finds the objects of an ended reservation, but the
    lifecycle left nothing behind, so it should count no repair (SweeperRepairs alarms)."""
    rid = r.active()
    outcome: dict[str, Any] = {}
    with kubernetes_timeout(10):  # the sweep's held list must not time out
        gate, arrived = gate_next(r.cloud, "list", "networkpolicies")  # its last kind
        sweeping = threading.Thread(target=lambda: outcome.update(sweep(r.cloud)))
        sweeping.start()
        try:
            wait_for(lambda: arrived, timeout=10, message="the sweep listed the objects")
            cancel(r.api, rid)
            ended = r.ended(rid)
        finally:
            gate.set()
            sweeping.join(20)
    statistics = outcome["statistics"]
    assert statistics["objects_deleted"] == 0 and outcome["repairs"] == 0, (
        f"the sweep counted {statistics['objects_deleted']} objects deleted and"
        f" {outcome['repairs']} repairs for a reservation torn down by the lifecycle"
    )
    assert statistics["objects_already_gone"] == 0, "it ended after the listing: no delete"
    return f"{ended}; the sweep counted no repair"


CASES = [
    Case(
        "provision",
        (
            *(f"create {kind}: 500 x2" for kind in CREATED[:-1]),
            "create pods: 500 x2, after the services were created",
        ),
        _creates_fail_twice,
    ),
    Case("provision", "create pods: 500 always (retries spent)", _pods_never_created),
    Case(
        "provision",
        "create pods: timeout, created after the response was lost",
        _pod_create_times_out,
    ),
    Case(
        "provision",
        "create secrets: timeout, created after the response was lost",
        _secret_create_times_out,
    ),
    Case("provision", "list pods (readiness): 500 x3", _readiness_list_fails),
    Case(
        "provision",
        f"stand-in unreachable {OUTAGE_SECONDS:g} s (5 clock min)",
        _outage_while_provisioning,
    ),
    Case(
        "provision",
        f"database connections killed for {DB_KILL_SECONDS:g} s",
        _database_killed_while_provisioning,
    ),
    Case(
        "active", "replace configmaps (extend): 500 x3", _checkpoint_replace_fails("configmaps", 3)
    ),
    Case(
        "active",
        "replace configmaps: 500 x12, outlasting the retries",
        _checkpoint_replace_fails("configmaps", 12),
    ),
    Case("active", "replace secrets (add user): 500 x3", _checkpoint_replace_fails("secrets", 3)),
    Case(
        "active",
        "replace configmaps: timeout, replaced after the response was lost",
        _checkpoint_replace_times_out,
    ),
    Case(
        "active",
        f"stand-in unreachable {OUTAGE_SECONDS:g} s during a checkpoint",
        _outage_while_active,
    ),
    Case(
        "active", "database connections killed during a checkpoint", _database_killed_while_active
    ),
    Case("active", "SendTaskSuccess throttled (the change's wake)", _throttled_wake_for_a_change),
    Case(
        "tear down",
        (*(f"delete {kind}: 500 x2" for kind in DELETED), "list pods: 500 x3"),
        _tear_down_deletes_fail,
    ),
    Case(
        "tear down",
        "delete pods: timeout, deleted after the response was lost",
        _tear_down_delete_times_out,
    ),
    Case("tear down", f"stand-in unreachable {OUTAGE_SECONDS:g} s", _outage_in_tear_down),
    Case("tear down", "database connections killed", _database_killed_in_tear_down),
    Case(
        "tear down", "SendTaskSuccess throttled (the cancel's wake)", _throttled_wake_for_a_cancel
    ),
    Case("jobs", "create job delivered again while active", _duplicate_create_while_active),
    Case("jobs", "cancel job delivered before the create job", _cancel_before_create),
    Case("jobs", "cancel job delivered three times", _duplicate_cancel),
    Case("jobs", "change job delivered twice", _duplicate_change),
    Case(
        "operator", "StopExecution on an active reservation, then a sweep", _stopped_by_an_operator
    ),
    Case(
        "tear down",
        "a sweep overlapping the tear down (objects listed before, row read after)",
        _sweep_overlapping_a_tear_down,
    ),
]


def _params() -> list[Any]:
    params = []
    for case in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
        ident = f"{case.phase}: {case.faults[0]}".replace(" ", "-")
        params.append(pytest.param(case, id=ident, marks=marks))
    return params


@pytest.mark.parametrize("case", _params())
def test_fault(case: Case, api: ApiClient, local_cloud: LocalCloud, record_property: Any) -> None:
    run = Run(api, local_cloud)
    rows = [Row(case.phase, fault) for fault in case.faults]
    RESULTS.extend(rows)
    began = time.monotonic()
    outcome = "FAILED"
    try:
        outcome = case.run(run)
    except BaseException as error:
        verdict = "XFAIL (known defect)" if case.xfail else "FAILED"
        outcome = f"{verdict}: {type(error).__name__}: {str(error)[:100]}"
        raise
    finally:
        release_holds(local_cloud)
        assert local_cloud.kubernetes is not None
        local_cloud.kubernetes.faults.clear()
        local_cloud.pollers["Jobs"].paused = False
        for row in rows:
            row.outcome, row.seconds = outcome, time.monotonic() - began
    try:
        run.finish()
    except BaseException as error:
        outcome += f"; FAILED after: {type(error).__name__}: {str(error)[:100]}"
        raise
    else:
        outcome += "; nothing left, no slot held, ended with a reason"
    finally:
        for row in rows:
            row.outcome, row.seconds = outcome, time.monotonic() - began
    record_property("faults", "; ".join(case.faults))
    record_property("outcome", outcome)
