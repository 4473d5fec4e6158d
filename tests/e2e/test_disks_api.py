"""Disk endpoints through the SigV4 gateway: create/list/show/delete/rename are recorded and
queued as disk jobs; names are validated; another user's disk is 404; a disk in use is 409;
a disk marked for deletion is 410; and a reservation may only name a usable disk."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from tests.e2e.jobs import count_reservations, drain_jobs, reserve
from tests.support.waiting import wait_for


def _name() -> str:
    return f"disk-{uuid.uuid4().hex[:8]}"


def _disk_jobs(cloud):
    return [(j.operation, j.disk_name, j.previous_name) for j in drain_jobs(cloud)]


def _create(api, name, profile="alice", **fields):
    return api.call("POST", "/v1/disks", profile=profile, body={"disk_name": name, **fields})


def test_create_list_show_and_the_job(api, local_cloud):
    name = _name()
    drain_jobs(local_cloud)
    created = _create(api, name, size_gb=200)
    assert created.status == 202, created.body
    assert (created.body["disk_name"], created.body["size_gb"]) == (name, 200)
    assert created.body["operation_status"] == "requested"
    assert _disk_jobs(local_cloud) == [("create", name, None)]
    assert name in [d["disk_name"] for d in api.call("GET", "/v1/disks").body["disks"]]
    assert api.call("GET", f"/v1/disks/{name}").body["disk_name"] == name
    # bob sees none of it
    assert api.call("GET", f"/v1/disks/{name}", profile="bob").status == 404
    bobs = api.call("GET", "/v1/disks", profile="bob").body["disks"]
    assert name not in [d["disk_name"] for d in bobs]


def test_a_second_disk_of_the_same_name_is_409(api, local_cloud):
    name = _name()
    _create(api, name)
    drain_jobs(local_cloud)
    again = _create(api, name)
    assert again.status == 409 and "already have a disk with that name" in again.body["message"]
    assert drain_jobs(local_cloud) == []
    assert _create(api, name, profile="bob").status == 202  # names are per user


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"disk_name": "has space"}, 422, "invalid disk name 'has space'"),
        ({"disk_name": "ok", "size_gb": 0}, 422, None),
        ({"disk_name": "ok", "size_gb": 20000}, 422, None),
        ({}, 422, None),
    ],
)
def test_bad_disk_requests_write_nothing(api, local_cloud, body, status, message):
    drain_jobs(local_cloud)
    reply = api.call("POST", "/v1/disks", body=body)
    assert reply.status == status
    assert reply.body.get("message") or reply.body.get("detail")
    if message:
        assert message in reply.body["message"]
    assert drain_jobs(local_cloud) == []


def test_delete_marks_it_for_deletion_in_30_days_then_it_is_gone(api, local_cloud):
    name = _name()
    _create(api, name)
    drain_jobs(local_cloud)
    deleted = api.call("DELETE", f"/v1/disks/{name}")
    assert deleted.status == 202 and deleted.body["is_deleted"] is True
    assert deleted.body["delete_date"] is not None
    assert _disk_jobs(local_cloud) == [("delete", name, None)]
    assert name not in [d["disk_name"] for d in api.call("GET", "/v1/disks").body["disks"]]
    again = api.call("DELETE", f"/v1/disks/{name}")
    assert again.status == 410 and "marked for deletion" in again.body["message"]
    renamed = api.call("POST", f"/v1/disks/{name}/rename", body={"new_name": _name()})
    assert renamed.status == 410
    assert drain_jobs(local_cloud) == []


def test_rename_moves_the_name_and_keeps_the_disk(api, local_cloud):
    old, new, taken = _name(), _name(), _name()
    disk_id = _create(api, old).body
    _create(api, taken)
    drain_jobs(local_cloud)
    clash = api.call("POST", f"/v1/disks/{old}/rename", body={"new_name": taken})
    assert clash.status == 409
    bad = api.call("POST", f"/v1/disks/{old}/rename", body={"new_name": "no/slash"})
    assert bad.status == 422 and "invalid disk name" in bad.body["message"]
    assert drain_jobs(local_cloud) == []
    renamed = api.call("POST", f"/v1/disks/{old}/rename", body={"new_name": new})
    assert renamed.status == 202 and renamed.body["disk_name"] == new
    assert renamed.body["created_at"] == disk_id["created_at"]
    assert _disk_jobs(local_cloud) == [("rename", new, old)]
    assert api.call("GET", f"/v1/disks/{old}").status == 404


def _take(cloud, user: str, disk_name: str, reservation_id: str) -> None:
    """The disk held by a reservation, as the lifecycle's `Take the disk` leaves it (this
    tier has no consumer, so no execution takes it): the same statement's effect."""
    with psycopg.connect(cloud.database_url, autocommit=True) as conn:
        taken = conn.execute(
            "UPDATE disks SET reservation_id = %s WHERE user_id = %s AND disk_name = %s"
            " AND reservation_id IS NULL",
            (reservation_id, user, disk_name),
        ).rowcount
    assert taken == 1


def test_a_disk_in_use_cannot_be_deleted_or_renamed_or_reserved(api, local_cloud):
    name = _name()
    _create(api, name)
    holder = reserve(api, gpu_type="t4", gpu_count=1).body["reservation_id"]
    _take(local_cloud, "alice", name, holder)
    assert api.call("GET", f"/v1/disks/{name}").body["in_use"] is True
    drain_jobs(local_cloud)
    for method, path, body in (
        ("DELETE", f"/v1/disks/{name}", None),
        ("POST", f"/v1/disks/{name}/rename", {"new_name": _name()}),
    ):
        reply = api.call(method, path, body=body)
        message = reply.body["message"]
        assert reply.status == 409 and f"in use by reservation {holder[:8]}" in message
    before = count_reservations(local_cloud)
    reply = reserve(api, gpu_type="t4", gpu_count=1, disk_name=name)
    assert reply.status == 409 and f"in use by reservation {holder[:8]}" in reply.body["message"]
    assert count_reservations(local_cloud) == before
    assert drain_jobs(local_cloud) == []


def test_a_reservation_must_name_an_existing_disk(api, local_cloud):
    before = count_reservations(local_cloud)
    reply = reserve(api, disk_name="never-made")
    assert reply.status == 422
    assert "gpu-dev disk create never-made" in reply.body["message"]
    assert count_reservations(local_cloud) == before
    name = _name()
    _create(api, name)
    assert reserve(api, disk_name=name).status == 202


def test_a_disk_named_by_a_live_reservation_cannot_be_renamed_or_deleted(api, local_cloud):
    name = _name()
    _create(api, name)
    holder = reserve(api, gpu_type="t4", gpu_count=1, disk_name=name).body["reservation_id"]
    drain_jobs(local_cloud)
    for method, path, body in (
        ("DELETE", f"/v1/disks/{name}", None),
        ("POST", f"/v1/disks/{name}/rename", {"new_name": _name()}),
    ):
        reply = api.call(method, path, body=body)
        assert reply.status == 409, reply.body
        assert f"in use by reservation {holder[:8]}" in reply.body["message"]
    assert api.call("GET", f"/v1/disks/{name}").body["is_deleted"] is False
    assert drain_jobs(local_cloud) == []


def test_restore_before_the_date_brings_a_deleted_disk_back_with_its_job(api, local_cloud):
    name = _name()
    _create(api, name)
    api.call("DELETE", f"/v1/disks/{name}")
    drain_jobs(local_cloud)
    assert api.call("POST", f"/v1/disks/{name}/restore", profile="bob").status == 404
    taken = _create(api, name)
    assert taken.status == 409
    assert f"gpu-dev disk restore {name}" in taken.body["message"]
    assert "marked for deletion" in taken.body["message"]
    assert drain_jobs(local_cloud) == []

    restored = api.call("POST", f"/v1/disks/{name}/restore")

    assert restored.status == 202, restored.body
    assert (restored.body["is_deleted"], restored.body["delete_date"]) == (False, None)
    assert restored.body["operation_status"] == "requested"
    assert _disk_jobs(local_cloud) == [("restore", name, None)]
    assert name in [d["disk_name"] for d in api.call("GET", "/v1/disks").body["disks"]]
    again = api.call("POST", f"/v1/disks/{name}/restore")
    assert again.status == 409 and "not marked for deletion" in again.body["message"]
    assert api.call("POST", f"/v1/disks/{_name()}/restore").status == 404
    assert drain_jobs(local_cloud) == []


def test_the_scheduled_purge_removes_a_deleted_disk_on_its_date_and_restore_is_then_404(
    api, local_cloud
):
    """The local cloud ticks the daily DiskPurge schedule like the others (the 410 of a
    restore past the date, before the purge ran, is in tests/integration)."""
    name = _name()
    _create(api, name)
    api.call("DELETE", f"/v1/disks/{name}")
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "UPDATE disks SET delete_date = current_date WHERE user_id = 'alice'"
            " AND disk_name = %s",
            (name,),
        )
    wait_for(
        lambda: api.call("GET", f"/v1/disks/{name}").status == 404,
        message="the scheduled purge deletes the disk's row",
    )
    drain_jobs(local_cloud)
    assert api.call("POST", f"/v1/disks/{name}/restore").status == 404
    assert _create(api, name).status == 202  # the name is free again


def test_the_content_listing_says_when_there_is_none_yet_and_shows_it_once_recorded(
    api, local_cloud
):
    name = _name()
    _create(api, name)
    empty = api.call("GET", f"/v1/disks/{name}/content")
    assert empty.status == 200, empty.body
    assert empty.body["content_listing"] is None and "no listing yet" in empty.body["message"]
    assert api.call("GET", f"/v1/disks/{name}/content", profile="bob").status == 404
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "UPDATE disks SET content_listing = %s, content_listed_at = '2026-11-20 10:30+00'"
            " WHERE user_id = 'alice' AND disk_name = %s",
            ("f 9 train.py\n", name),
        )
    listed = api.call("GET", f"/v1/disks/{name}/content").body
    assert listed["content_listing"] == "f 9 train.py\n"
    assert listed["content_listed_at"].startswith("2026-11-20T10:30")
    assert "as of 2026-11-20 10:30 UTC" in listed["message"]
    api.call("DELETE", f"/v1/disks/{name}")
    assert api.call("GET", f"/v1/disks/{name}/content").status == 410
