"""Driving reservations through the API and watching them in the database and the cluster."""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from botocore.exceptions import ClientError

from gpudev.aws import aws_clients
from gpudev.cluster.vocabulary import KINDS, RESERVATION_LABEL
from localcloud.aws import SSO_PROFILE, SSO_SESSION_NAME
from localcloud.stack import LocalCloud
from tests.support.api import ApiClient

# Kubernetes' label rules (apimachinery validation): a value, and a key's name part, is at
# most 63 characters of this shape; a key's optional prefix is a DNS subdomain.
_LABEL_NAME = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def profile_of(username: str) -> str:
    """The credentials profile of a local user: the SSO user's username is her login."""
    return SSO_PROFILE if username == SSO_SESSION_NAME else username


def label_problems(labels: dict[str, str]) -> list[str]:
    """Why a real API server would refuse these labels (empty if it would accept them)."""
    problems = []
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
            problems.append(f"key {key!r}: prefix is not a DNS subdomain")
        if not name or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
            problems.append(f"key {key!r}: name is not a valid label name")
        if len(value) > 63 or not _LABEL_NAME.fullmatch(value):
            problems.append(f"{key}={value!r}: not a valid label value")
    return problems


def reserve(api: ApiClient, profile: str = "alice", **fields: Any) -> dict[str, Any]:
    body = {"gpu_type": "t4", "gpu_count": 1, "hours": 1, "github_user": "alice", **fields}
    reply = api.call("POST", "/v1/reservations", profile=profile, body=body)
    assert reply.status == 202, reply.body
    return dict(reply.body)


def h100s_full_and_one_queued(api: ApiClient) -> tuple[str, str, str]:
    """Both h100 nodes taken by alice (the first reservation for 0.6 h) and bob's request
    queued behind them: the ids (first, second, queued), once the two are active."""
    first = reserve(api, gpu_type="h100", gpu_count=8, hours=0.6)["reservation_id"]
    second = reserve(api, gpu_type="h100", gpu_count=8)["reservation_id"]
    wait_for_status(api, first, "active")
    wait_for_status(api, second, "active")
    queued = reserve(api, gpu_type="h100", gpu_count=8, profile="bob")["reservation_id"]
    wait_for_status(api, queued, "queued", profile="bob")
    return first, second, queued


def show(api: ApiClient, reservation_id: str, profile: str = "alice") -> dict[str, Any]:
    reply = api.call("GET", f"/v1/reservations/{reservation_id}", profile=profile)
    assert reply.status == 200, reply.body
    return dict(reply.body)


def wait_for_status(
    api: ApiClient,
    reservation_id: str,
    statuses: str | tuple[str, ...],
    timeout: float = 20,
    profile: str = "alice",
) -> dict[str, Any]:
    wanted = (statuses,) if isinstance(statuses, str) else statuses
    deadline = time.monotonic() + timeout
    current: dict[str, Any] = {}
    while time.monotonic() < deadline:
        current = show(api, reservation_id, profile)
        if current["status"] in wanted:
            return current
        time.sleep(0.1)
    raise AssertionError(
        f"{reservation_id[:8]} is {current.get('status')} "
        f"({current.get('current_detailed_status')}), not {wanted} after {timeout}s"
    )


def objects_of(cloud: LocalCloud, reservation_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every object labelled with the reservation, by kind, straight from the stand-in."""
    assert cloud.kubernetes is not None
    store = cloud.kubernetes.store
    selector = f"{RESERVATION_LABEL}={reservation_id}"
    return {kind: store.list(kind, None, selector)["items"] for kind in KINDS}


def secret_data(secret: dict[str, Any]) -> dict[str, str]:
    """A Secret's values as text, as the API server stores them (base64 `data`) or as sent
    (`stringData`)."""
    decoded = {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}
    return {**decoded, **(secret.get("stringData") or {})}


def assert_nothing_left(cloud: LocalCloud, reservation_id: str, timeout: float = 10) -> None:
    """Nothing labelled with the reservation remains once its pods have terminated: right
    after the end only pods may still be there, and only Terminating (deleted, within their
    grace period, as in a real cluster), and claims they still use (deleted, held by the
    pvc-protection finalizer until their pods are gone)."""
    lingering = [
        f"{kind}/{item['metadata']['name']}"
        for kind, items in objects_of(cloud, reservation_id).items()
        for item in items
        if not (
            kind in ("pods", "persistentvolumeclaims") and item["metadata"].get("deletionTimestamp")
        )
    ]
    assert lingering == [], f"not deleted: {lingering}"
    deadline = time.monotonic() + timeout
    while any(objects_of(cloud, reservation_id).values()):
        assert time.monotonic() < deadline, f"pods of {reservation_id[:8]} never went"
        time.sleep(0.1)
    assert allocated_slots(cloud, reservation_id) == 0


def allocated_slots(cloud: LocalCloud, reservation_id: str) -> int:
    with psycopg.connect(cloud.database_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM allocations WHERE reservation_id = %s", (reservation_id,)
        ).fetchone()
    return int(row[0]) if row else 0


def execution_history(cloud: LocalCloud, reservation_id: str) -> list[str]:
    """The names of the states the reservation's execution entered, in order."""
    assert cloud.aws is not None
    sfn = cloud.aws.client("stepfunctions")
    arn = cloud.resources.state_machine_arns["Reservation"].replace(":stateMachine:", ":execution:")
    events = sfn.get_execution_history(executionArn=f"{arn}:{reservation_id}", maxResults=1000)
    return [
        e["stateEnteredEventDetails"]["name"]
        for e in events["events"]
        if "stateEnteredEventDetails" in e
    ]


def cancel(api: ApiClient, reservation_id: str, profile: str = "alice") -> None:
    reply = api.call("POST", f"/v1/reservations/{reservation_id}/cancel", profile=profile)
    assert reply.status in (202, 409), reply.body


def end_everything(api: ApiClient, cloud: LocalCloud) -> None:
    """Cancel every live reservation and wait until each has ended with nothing left, so
    the next test starts on an empty cluster."""
    with psycopg.connect(cloud.database_url) as conn:
        live = conn.execute(
            "SELECT reservation_id::text, user_id FROM reservations"
            " WHERE status IN ('pending', 'queued', 'preparing', 'active')"
        ).fetchall()
    for reservation_id, user in live:
        cancel(api, reservation_id, profile=profile_of(user))
    for reservation_id, user in live:
        wait_for_status(
            api,
            reservation_id,
            ("cancelled", "expired", "failed"),
            timeout=30,
            profile=profile_of(user),
        )
    assert cloud.kubernetes is not None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pods = [
            pod
            for namespace in ("gpu-dev", "gpu-dev-profiling", "gpu-dev-docker")
            for pod in cloud.kubernetes.store.list("pods", namespace)["items"]
        ]
        if not pods:
            return
        time.sleep(0.1)
    raise AssertionError(f"pods left behind: {[p['metadata']['name'] for p in pods]}")


EVENT = json.loads(
    (Path(__file__).resolve().parents[2] / "events" / "sweeper" / "scheduled.json").read_text()
)


def sweep(cloud: LocalCloud, *, until_run: bool = True) -> dict[str, Any]:
    """One sweep that ran. A run that finds another holding the sweep's lock is skipped and
    does nothing (a sweep of an earlier test may still be finishing): with `until_run`, try
    again, as the next scheduled run would."""
    deadline = time.monotonic() + 30
    while True:
        invocation = cloud.lambdas.invoke("Sweeper", EVENT)
        assert not invocation.errored, invocation.payload
        skipped = invocation.payload.get("outcome") == "skipped"
        if not (until_run and skipped) or time.monotonic() > deadline:
            return dict(invocation.payload)
        time.sleep(0.2)


def execution_arn(cloud: LocalCloud, reservation_id: str) -> str:
    machine = cloud.resources.state_machine_arns["Reservation"]
    return f"{machine.replace(':stateMachine:', ':execution:')}:{reservation_id}"


def stop_execution(cloud: LocalCloud, reservation_id: str) -> None:
    assert cloud.aws is not None
    sfn = cloud.aws.client("stepfunctions")
    arn = execution_arn(cloud, reservation_id)
    sfn.stop_execution(executionArn=arn, error="Operator", cause="stopped by hand")
    # As in AWS (localcloud/moto_stop.py): aborted at once, also while parked on a token.
    assert sfn.describe_execution(executionArn=arn)["status"] == "ABORTED"


STOPPED_REASON = re.compile(
    r"its execution ended \(ABORTED\) without tearing down; cleaned up by the sweeper"
)


def task_token(cloud: LocalCloud, reservation_id: str) -> str:
    """The token the reservation's execution is parked on."""
    with psycopg.connect(cloud.database_url) as conn:
        row = conn.execute(
            "SELECT task_token FROM reservations WHERE reservation_id = %s", (reservation_id,)
        ).fetchone()
    assert row and row[0], "parked"
    return str(row[0])


@contextmanager
def throttled_send_task_success(token: str) -> Iterator[list[str]]:
    """SendTaskSuccess to `token` is refused with ThrottlingException, as Step Functions
    refuses it when the account's token bucket is empty, by the functions' own client."""
    client = aws_clients().stepfunctions
    event = f"before-parameter-build.{client.meta.service_model.service_id.hyphenize()}"
    refused: list[str] = []

    def throttle(params: dict[str, Any], **_: Any) -> None:
        if params.get("taskToken") == token:
            refused.append(token)
            raise ClientError(
                {"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}},
                "SendTaskSuccess",
            )

    client.meta.events.register(f"{event}.SendTaskSuccess", throttle, unique_id="test-throttle")
    try:
        yield refused
    finally:
        client.meta.events.unregister(f"{event}.SendTaskSuccess", unique_id="test-throttle")
