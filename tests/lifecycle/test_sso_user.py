"""An IAM Identity Center (SSO) user's whole reservation: carol, whose username is her login
`carol@example.com`, reserves, gets an active pod whose labels a real API server accepts,
extends, and cancels with nothing left behind."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tests.lifecycle.conftest import SECONDS_PER_HOUR
from tests.lifecycle.helpers import (
    allocated_slots,
    cancel,
    label_problems,
    objects_of,
    reserve,
    show,
    wait_for_status,
)
from tests.support.waiting import wait_for

CAROL = "carol@example.com"


def _timestamp(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def _labels_refused_by_kubernetes(objects: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Every label (and Service selector) of every object, checked against Kubernetes'
    label rules; a real API server refuses the whole object for any one of these."""
    problems = []
    for kind, items in objects.items():
        for item in items:
            where = f"{kind}/{item['metadata']['name']}"
            labelled = {
                "labels": item["metadata"].get("labels") or {},
                "selector": (item.get("spec") or {}).get("selector") or {}
                if kind == "services"
                else {},
            }
            for field, labels in labelled.items():
                problems += [f"{where} {field}: {p}" for p in label_problems(labels)]
    return problems


def test_an_sso_user_reserves_extends_and_cancels_with_valid_kubernetes_labels(api, local_cloud):
    rid = reserve(api, profile="carol", gpu_type="t4", gpu_count=1, hours=1)["reservation_id"]
    active = wait_for_status(api, rid, "active", profile="carol")
    assert active["user_id"] == CAROL
    objects = objects_of(local_cloud, rid)
    assert [p["status"]["phase"] for p in objects["pods"]] == ["Running"]
    assert allocated_slots(local_cloud, rid) == 1
    # Checked at the end, so that one run also shows whether extend and cancel work for her.
    refused_labels = _labels_refused_by_kubernetes(objects)

    first_expiry = _timestamp(active["expires_at"])
    reply = api.call("POST", f"/v1/reservations/{rid}/extend", profile="carol", body={"hours": 1})
    assert reply.status == 202, reply.body
    extended = wait_for(
        lambda: (
            (r := show(api, rid, "carol"))["expires_at"]
            and _timestamp(r["expires_at"]) > first_expiry + 1
            and r
        ),
        message="the new expiry",
    )
    assert abs(_timestamp(extended["expires_at"]) - first_expiry - SECONDS_PER_HOUR) < 1
    assert extended["status"] == "active"

    cancel(api, rid, profile="carol")
    ended = wait_for_status(api, rid, "cancelled", timeout=30, profile="carol")
    assert ended["reservation_ended"]
    # Pod deletion may be graceful: wait for the objects to go rather than expect it at once.
    wait_for(
        lambda: all(items == [] for items in objects_of(local_cloud, rid).values()),
        timeout=30,
        message=f"nothing labelled with {rid[:8]} left",
    )
    assert allocated_slots(local_cloud, rid) == 0

    assert refused_labels == [], "\n".join(refused_labels)
