"""What a start says while it runs and when it fails (issue #32): the readiness check's step
in the status line and the timeline, and on a failed start the last 20 lines the pod
printed, read through pods/log (rbac.yaml grants the lifecycle `get` on it; without the
grant the read is refused and the reservation fails the same way)."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from localcloud.kubernetes.container_restarts import Crash
from tests.lifecycle.conftest import DEV_IMAGE
from tests.lifecycle.helpers import assert_nothing_left, reserve, wait_for_status

CRASH_LOG = "\n".join(f"startup step {n}" for n in range(1, 26))  # 25 lines


def _events(api: Any, rid: str) -> list[dict[str, Any]]:
    reply = api.call("GET", f"/v1/reservations/{rid}/events")
    assert reply.status == 200, reply.body
    return list(reply.body["events"])


@pytest.fixture
def crashing(local_cloud: Any) -> Iterator[None]:
    """The dev image's container prints 25 lines and exits 1, every run."""
    local_cloud.cluster.kubelet.crashing_images = {
        DEV_IMAGE: Crash(1, message="no sshd in this image\n", log=CRASH_LOG)
    }
    yield
    local_cloud.cluster.kubelet.crashing_images = {}


def test_a_start_that_crashes_records_its_reason_and_the_last_20_log_lines(
    api, local_cloud, crashing, gpu_dev
):
    # `reserve` follows it to the end, then prints the reason and the log tail.
    followed = gpu_dev(
        "reserve", "-t", "t4", "-g", "1", "-h", "1", "--no-interactive", "--github-user", "alice"
    )
    assert followed.exit_code == 1, followed.output
    assert "Ended (failed): the pod did not start: container gpu-dev keeps" in followed.stdout
    assert "last 20 log lines of pod " in followed.stdout and "startup step 25" in followed.stdout
    newest = api.call("GET", "/v1/reservations?limit=1").body["reservations"][0]
    rid = newest["reservation_id"]
    failed = wait_for_status(api, rid, "failed", timeout=30)
    assert failed["failure_reason"].startswith("the pod did not start: container gpu-dev keeps")
    events = _events(api, rid)
    logs = [e for e in events if e["kind"] == "pod_log"]
    assert len(logs) == 1, events
    head, *lines = logs[0]["detail"].splitlines()
    assert head.startswith("last 20 log lines of pod ") and head.endswith("(container gpu-dev):")
    assert lines == [f"startup step {n}" for n in range(6, 26)]
    ending = events[-1]
    assert (ending["kind"], ending["to_status"]) == ("status", "failed")
    assert ending["detail"] == failed["failure_reason"]
    assert events.index(logs[0]) < len(events) - 1  # recorded before the ending
    assert [e["to_status"] for e in events if e["kind"] == "status"][:1] == ["pending"]
    assert_nothing_left(local_cloud, rid)

    shown = gpu_dev("show", rid[:8])
    assert shown.exit_code == 0, shown.output
    assert "Ended (failed): the pod did not start: container gpu-dev keeps" in shown.stdout
    assert "last 20 log lines of pod " in shown.stdout
    assert "startup step 25" in shown.stdout and "startup step 5\n" not in shown.stdout
    table = gpu_dev("events", rid[:8])
    assert table.exit_code == 0, table.output
    assert "pending" in table.stdout and "→ failed" in table.stdout and "pod_log" in table.stdout
    as_json = gpu_dev("-o", "json", "events", rid[:8])
    assert json.loads(as_json.stdout) == events


def test_without_the_pods_log_grant_the_read_is_refused_and_the_start_fails_the_same(
    api, local_cloud, crashing
):
    store = local_cloud.kubernetes.store

    def without_pods_log(role: dict[str, Any]) -> None:
        role["rules"] = [r for r in role["rules"] if r["resources"] != ["pods/log"]]

    granted = store.get("roles", "gpu-dev", "gpu-dev-lifecycle")
    assert {"resources": ["pods/log"], "verbs": ["get"], "apiGroups": [""]} in granted["rules"]
    store.update("roles", "gpu-dev", "gpu-dev-lifecycle", without_pods_log)
    try:
        rid = reserve(api)["reservation_id"]
        failed = wait_for_status(api, rid, "failed", timeout=30)
    finally:
        store.update("roles", "gpu-dev", "gpu-dev-lifecycle", lambda r: r.update(granted))
    assert failed["failure_reason"].startswith("the pod did not start: container gpu-dev keeps")
    logs = [e["detail"] for e in _events(api, rid) if e["kind"] == "pod_log"]
    assert len(logs) == 1 and logs[0].startswith("no log from pod "), logs
    assert 'cannot get resource "pods/log"' in logs[0] and "forbidden" in logs[0]
    assert_nothing_left(local_cloud, rid)


def test_an_image_that_cannot_be_pulled_says_so_while_it_waits_and_when_it_fails(api, local_cloud):
    local_cloud.cluster.kubelet.image_pulls_fail = True
    rid = reserve(api)["reservation_id"]
    failed = wait_for_status(api, rid, "failed", timeout=30)
    # at the ready timeout: in the back-off between attempts, or in an attempt
    assert re.search(
        r"the image could not be pulled \((ImagePullBackOff|ErrImagePull)",
        failed["failure_reason"],
    )
    events = _events(api, rid)
    steps = [e["detail"] for e in events if e["kind"] == "startup"]
    assert any(s.startswith("the image could not be pulled (ImagePullBackOff") for s in steps)
    assert all(a != b for a, b in itertools.pairwise(steps))  # written on change
    logs = [e["detail"] for e in events if e["kind"] == "pod_log"]
    assert len(logs) == 1 and "is waiting to start: trying and failing to pull image" in logs[0]
    assert_nothing_left(local_cloud, rid)


def test_an_image_that_does_not_exist_fails_the_start_and_show_prints_the_pull_error(
    api, local_cloud, gpu_dev
):
    # The registry has no such image: ErrImagePull (containerd's NotFound), then
    # ImagePullBackOff, as a kubelet reports it. It will never pull: failed without waiting
    # for the ready deadline ("did not start", not "not ready in time").
    local_cloud.cluster.kubelet.missing_images = frozenset({DEV_IMAGE})
    rid = reserve(api)["reservation_id"]
    failed = wait_for_status(api, rid, "failed", timeout=30)
    reason = failed["failure_reason"]
    assert reason.startswith("the pod did not start: the image does not exist ("), reason
    assert f"{DEV_IMAGE}: not found" in reason
    events = _events(api, rid)
    kinds = [e["kind"] for e in events]
    assert kinds.index("grant") < kinds.index("scheduling") < kinds.index("image")
    pulls = [e["detail"] for e in events if e["kind"] == "image"]
    assert pulls[0].startswith(f"pulling image {DEV_IMAGE} for pod ")
    assert pulls[-1].startswith("pull error for pod ") and "ImagePull" in pulls[-1]
    assert len(pulls) == 2 and "readiness" not in kinds
    logs = [e["detail"] for e in events if e["kind"] == "pod_log"]
    assert len(logs) == 1 and "(container jupyter-check)" in logs[0], logs
    # The kubelet's words for ErrImagePull or ImagePullBackOff, whichever the read met.
    assert "is waiting to start: " in logs[0] and "pull" in logs[0].rsplit(": ", 1)[1]
    assert_nothing_left(local_cloud, rid)

    shown = gpu_dev("show", rid[:8])
    assert shown.exit_code == 0, shown.output
    assert "Ended (failed): the pod did not start: the image does not exist" in shown.stdout
    assert "no log from pod " in shown.stdout and "is waiting to start" in shown.stdout
    table = gpu_dev("events", rid[:8])
    assert "pull error for pod" in table.stdout and "grant" in table.stdout


def test_a_started_reservation_timeline_runs_from_submit_to_ready(api, local_cloud, gpu_dev):
    rid = reserve(api)["reservation_id"]
    wait_for_status(api, rid, "active")
    events = _events(api, rid)
    # Each step once, in the order it happened, before the status change it led to.
    kinds = [e["kind"] for e in events]
    for kind in ("grant", "scheduling", "image", "readiness"):
        assert kind in kinds, (kind, events)
    assert kinds.index("grant") < kinds.index("scheduling") < kinds.index("readiness")
    assert kinds.index("readiness") < len(kinds) - 1  # then preparing -> active
    pulled = [e["detail"] for e in events if e["kind"] == "image"]
    assert pulled == [
        f"pulling image {DEV_IMAGE} for pod gpu-dev-{rid[:8]}-0",
        f"image {DEV_IMAGE} pulled for pod gpu-dev-{rid[:8]}-0",
    ] or len(set(pulled)) == len(pulled), pulled
    grant = next(e["detail"] for e in events if e["kind"] == "grant")
    assert grant.startswith("capacity granted: 1 slot(s) on "), grant
    changes = [(e["from_status"], e["to_status"]) for e in events if e["kind"] == "status"]
    assert changes[0] == (None, "pending") and changes[-1] == ("preparing", "active")
    assert events[-1]["detail"] == "ready"
    assert ("queued", "preparing") in changes
    steps = [e["detail"] for e in events if e["kind"] == "startup"]
    assert all(a != b for a, b in itertools.pairwise(steps))  # each written on a change
    table = gpu_dev("events", rid[:8])
    assert "preparing → active" in table.stdout and "ready" in table.stdout
