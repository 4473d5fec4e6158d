"""Cancel from every live state, and the failure paths: whatever happens, nothing labelled
with the reservation remains and its allocation is released."""

from __future__ import annotations

import json
import re
import time

import psycopg

from tests.lifecycle.helpers import (
    allocated_slots,
    assert_nothing_left,
    cancel,
    execution_history,
    objects_of,
    reserve,
    show,
    wait_for_status,
)
from tests.support.waiting import wait_for


def test_cancel_while_pending(api, local_cloud):
    poller = local_cloud.pollers["Jobs"]
    poller.pause()  # returns once a long poll in flight has finished
    rid = reserve(api)["reservation_id"]
    cancel(api, rid)
    assert show(api, rid)["status"] == "pending"
    poller.paused = False
    ended = wait_for_status(api, rid, "cancelled")
    assert (
        ended["reservation_ended"] and ended["current_detailed_status"] == "cancelled by the user"
    )
    assert_nothing_left(local_cloud, rid)
    assert "Pending" not in execution_history(local_cloud, rid)


def test_cancel_while_queued(api, local_cloud):
    holders = [reserve(api, gpu_type="h100", gpu_count=8, hours=1)["reservation_id"] for _ in "ab"]
    for holder in holders:
        wait_for_status(api, holder, "active")
    rid = reserve(api, gpu_type="h100", gpu_count=8, hours=1)["reservation_id"]
    # (A pending row, its execution not yet parked, has its place too: wait for queued.)
    queued = wait_for(
        lambda: (r := show(api, rid))["status"] == "queued" and r["queue_position"] and r,
        message="queued",
    )
    assert queued["status"] == "queued" and queued["queue_position"] == 1
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    assert_nothing_left(local_cloud, rid)
    assert all(show(api, h)["status"] == "active" for h in holders)


def test_cancel_while_preparing(api, local_cloud):
    local_cloud.cluster.kubelet.image_pulls_fail = True
    rid = reserve(api)["reservation_id"]
    wait_for_status(api, rid, "preparing")
    wait_for(lambda: objects_of(local_cloud, rid)["pods"], message="pod created")
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    assert_nothing_left(local_cloud, rid)


def test_cancel_while_active(api, local_cloud):
    rid = reserve(api, gpu_type="cpu-x86", gpu_count=0)["reservation_id"]
    active = wait_for_status(api, rid, "active")
    # The stand-in's CPU node groups are in private subnets: the internal address, said so.
    assert active["node_address_kind"] == "internal" and active["node_ip"].startswith("10.")
    assert allocated_slots(local_cloud, rid) == 1
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    assert_nothing_left(local_cloud, rid)
    assert execution_history(local_cloud, rid)[-1] == "Cancelled"


def test_a_pod_creation_that_fails_once_is_retried(api, local_cloud):
    local_cloud.kubernetes.faults.fail_next("create", "pods", 1)
    rid = reserve(api)["reservation_id"]
    wait_for_status(api, rid, "active")


def test_pod_creation_that_always_fails_ends_failed_with_nothing_left(api, local_cloud):
    local_cloud.kubernetes.faults.fail_next("create", "pods", 1000)
    rid = reserve(api)["reservation_id"]
    # 86 attempts (the 30-minute outage limit) at up to 1 s each here: about 45 s
    failed = wait_for_status(api, rid, ("failed", "active"), timeout=150)
    assert failed["status"] == "failed"
    assert "KubernetesUnavailable" in failed["failure_reason"]
    assert_nothing_left(local_cloud, rid)
    assert execution_history(local_cloud, rid)[-1] == "Failed"


def test_a_pod_that_never_becomes_ready_fails_after_the_timeout(api, local_cloud):
    local_cloud.cluster.kubelet.image_pulls_fail = True
    rid = reserve(api)["reservation_id"]
    failed = wait_for_status(api, rid, "failed", timeout=30)
    assert "the pod was not ready in time" in failed["failure_reason"]
    # Between attempts the kubelet says ImagePullBackOff, during one ErrImagePull: the
    # ready timeout (10 s here) can end in either, as on EKS.
    assert re.search(
        r"the image could not be pulled \((ImagePullBackOff|ErrImagePull)",
        failed["failure_reason"],
    )
    assert_nothing_left(local_cloud, rid)


def test_duplicate_create_jobs_start_one_execution_and_one_pod(api, local_cloud):
    poller = local_cloud.pollers["Jobs"]
    poller.pause()  # returns once a long poll in flight has finished
    rid = reserve(api)["reservation_id"]
    sqs = local_cloud.aws.client("sqs")
    url = local_cloud.resources.queue_urls["Jobs"]
    body = json.dumps({"kind": "create_reservation", "reservation_id": rid, "user_id": "alice"})
    for _ in range(2):
        sqs.send_message(QueueUrl=url, MessageBody=body)
    poller.paused = False
    wait_for_status(api, rid, "active")
    time.sleep(1)
    sfn = local_cloud.aws.client("stepfunctions")
    executions = sfn.list_executions(
        stateMachineArn=local_cloud.resources.state_machine_arns["Reservation"]
    )["executions"]
    assert [e["name"] for e in executions].count(rid) == 1
    assert len(objects_of(local_cloud, rid)["pods"]) == 1
    with psycopg.connect(local_cloud.database_url) as conn:
        left = conn.execute(
            "SELECT count(*) FROM reservations WHERE reservation_id = %s", (rid,)
        ).fetchone()
    assert left == (1,)
