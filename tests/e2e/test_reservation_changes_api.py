"""Extend, add-user, remove-user and Jupyter through the SigV4 gateway: each change is
recorded on the row with a new change generation and queued once; repeats change nothing;
limits are refused at submit with the reason; nobody changes someone else's reservation."""

from __future__ import annotations

import psycopg
import pytest

from tests.e2e.jobs import drain_jobs, reserve
from tests.support.databases import mark_ended


def _changed_jobs(cloud):
    return [
        (str(j.reservation_id), j.change_generation)
        for j in drain_jobs(cloud)
        if j.kind == "reservation_changed"
    ]


def test_extend_adds_hours_and_queues_the_change(api, local_cloud):
    rid = reserve(api, hours=2).body["reservation_id"]
    drain_jobs(local_cloud)
    reply = api.call("POST", f"/v1/reservations/{rid[:8]}/extend", body={"hours": 1.5})
    assert reply.status == 202, reply.body
    assert reply.body["duration_hours"] == 3.5
    assert _changed_jobs(local_cloud) == [(rid, 1)]


@pytest.mark.parametrize(
    ("start_hours", "extend_by", "message"),
    [
        (2, 0.5, "extend by 1 to 24 hours at a time; got 0.5"),
        (2, 25, "extend by 1 to 24 hours at a time; got 25"),
        (24, 24.5, "extend by 1 to 24 hours"),
        (24, 20, None),  # 44 h: allowed
    ],
)
def test_extension_limits(api, local_cloud, start_hours, extend_by, message):
    rid = reserve(api, hours=start_hours).body["reservation_id"]
    drain_jobs(local_cloud)
    reply = api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": extend_by})
    if message is None:
        assert reply.status == 202
        return
    assert reply.status == 422 and message in reply.body["message"]
    assert api.call("GET", f"/v1/reservations/{rid}").body["duration_hours"] == start_hours
    assert drain_jobs(local_cloud) == []


def test_the_total_since_launch_stays_within_48_hours(api, local_cloud):
    rid = reserve(api, hours=24).body["reservation_id"]
    assert api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": 20}).status == 202
    drain_jobs(local_cloud)
    reply = api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": 5})
    assert reply.status == 422
    assert "at most 48 h in total and this one has 44 h (4 h left to add)" in reply.body["message"]
    assert api.call("GET", f"/v1/reservations/{rid}").body["duration_hours"] == 44
    assert drain_jobs(local_cloud) == []


def test_the_database_refuses_more_than_48_hours_even_if_code_did_not(local_cloud):
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "INSERT INTO users (username, principal_arn) VALUES ('carol', 'arn:carol')"
            " ON CONFLICT DO NOTHING"
        )
        with pytest.raises(psycopg.errors.CheckViolation, match="reservations_total_hours_check"):
            conn.execute(
                "INSERT INTO reservations (reservation_id, user_id, gpu_type, gpu_count,"
                " duration_hours) VALUES (gen_random_uuid(), 'carol', 't4', 1, 48.5)"
            )


def test_add_user_is_recorded_once(api, local_cloud):
    rid = reserve(api).body["reservation_id"]
    drain_jobs(local_cloud)
    first = api.call("POST", f"/v1/reservations/{rid}/users", body={"github_username": "octo-cat"})
    again = api.call("POST", f"/v1/reservations/{rid}/users", body={"github_username": "Octo-Cat"})
    assert (first.status, again.status) == (202, 202)
    assert again.body["secondary_users"] == ["octo-cat"]
    assert _changed_jobs(local_cloud) == [(rid, 1)]
    bad = api.call("POST", f"/v1/reservations/{rid}/users", body={"github_username": "a--b"})
    assert bad.status == 422 and "invalid GitHub username 'a--b'" in bad.body["message"]


def test_remove_user_takes_an_added_user_off_once(api, local_cloud):
    rid = reserve(api).body["reservation_id"]
    api.call("POST", f"/v1/reservations/{rid}/users", body={"github_username": "octo-cat"})
    api.call("POST", f"/v1/reservations/{rid}/users", body={"github_username": "mona"})
    drain_jobs(local_cloud)
    removed = api.call("DELETE", f"/v1/reservations/{rid[:8]}/users/Octo-Cat")
    assert removed.status == 202, removed.body
    assert removed.body["secondary_users"] == ["mona"]
    assert _changed_jobs(local_cloud) == [(rid, 3)]

    again = api.call("DELETE", f"/v1/reservations/{rid}/users/octo-cat")
    assert again.status == 404
    assert again.body["message"] == (
        f"'octo-cat' is not a user of reservation {rid[:8]} (added users: mona)"
    )
    bad = api.call("DELETE", f"/v1/reservations/{rid}/users/a--b")
    assert bad.status == 422 and "invalid GitHub username 'a--b'" in bad.body["message"]
    assert api.call("GET", f"/v1/reservations/{rid}").body["secondary_users"] == ["mona"]
    assert drain_jobs(local_cloud) == []


def test_jupyter_is_switched_on_and_off_once_each(api, local_cloud):
    rid = reserve(api).body["reservation_id"]
    drain_jobs(local_cloud)
    on = api.call("PUT", f"/v1/reservations/{rid}/jupyter")
    on_again = api.call("PUT", f"/v1/reservations/{rid}/jupyter")
    off = api.call("DELETE", f"/v1/reservations/{rid}/jupyter")
    assert (on.status, on_again.status, off.status) == (202, 202, 202)
    assert (on.body["jupyter_enabled"], off.body["jupyter_enabled"]) == (True, False)
    assert _changed_jobs(local_cloud) == [(rid, 1), (rid, 2)]


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("POST", "extend", {"hours": 1}),
        ("POST", "users", {"github_username": "octocat"}),
        ("DELETE", "users/octocat", None),
        ("PUT", "jupyter", None),
        ("DELETE", "jupyter", None),
    ],
)
def test_changes_to_someone_elses_reservation_are_404_and_write_nothing(
    api, local_cloud, method, suffix, body
):
    rid = reserve(api, profile="alice").body["reservation_id"]
    drain_jobs(local_cloud)
    reply = api.call(method, f"/v1/reservations/{rid}/{suffix}", profile="bob", body=body)
    assert reply.status == 404
    after = api.call("GET", f"/v1/reservations/{rid}").body
    assert (after["duration_hours"], after["secondary_users"], after["jupyter_enabled"]) == (
        2,
        [],
        False,
    )
    assert drain_jobs(local_cloud) == []


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("POST", "extend", {"hours": 1}),
        ("POST", "users", {"github_username": "octocat"}),
        ("DELETE", "users/octocat", None),
        ("PUT", "jupyter", None),
    ],
)
def test_changes_to_an_ended_reservation_are_409_naming_its_state(
    api, local_cloud, method, suffix, body
):
    rid = reserve(api).body["reservation_id"]
    mark_ended(local_cloud.database_url, rid, "cancelled")
    drain_jobs(local_cloud)
    reply = api.call(method, f"/v1/reservations/{rid}/{suffix}", body=body)
    assert reply.status == 409 and "it is cancelled" in reply.body["message"]
    assert drain_jobs(local_cloud) == []
