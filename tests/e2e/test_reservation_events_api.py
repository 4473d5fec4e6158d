"""GET /v1/reservations/{id}/events: a reservation's timeline, for its owner only (another
user's is 404, as every read of a reservation), found by id or prefix, paged and bounded
like the list of reservations."""

from __future__ import annotations

import psycopg

from tests.e2e.jobs import reserve


def _add_steps(cloud, reservation_id: str, count: int) -> None:  # type: ignore[no-untyped-def]
    with psycopg.connect(cloud.database_url) as conn:
        for n in range(count):
            conn.execute(
                "INSERT INTO reservation_events (reservation_id, from_status, to_status, detail,"
                " kind) VALUES (%s, 'pending', 'pending', %s, 'startup')",
                (reservation_id, f"step {n}"),
            )


def test_the_owner_reads_the_timeline_by_id_or_prefix_oldest_first(api, local_cloud):
    rid = reserve(api, gpu_type="t4", gpu_count=1).body["reservation_id"]
    _add_steps(local_cloud, rid, 2)
    reply = api.call("GET", f"/v1/reservations/{rid}/events")
    assert reply.status == 200, reply.body
    events = reply.body["events"]
    assert [(e["kind"], e["to_status"], e["detail"]) for e in events] == [
        ("status", "pending", None),
        ("startup", "pending", "step 0"),
        ("startup", "pending", "step 1"),
    ]
    assert events[0]["from_status"] is None and events[0]["at"]
    assert (reply.body["limit"], reply.body["offset"]) == (100, 0)
    assert api.call("GET", f"/v1/reservations/{rid[:8]}/events").body["events"] == events


def test_another_users_timeline_is_404_and_bad_ids_are_refused_as_every_read(api):
    rid = reserve(api, gpu_type="t4", gpu_count=1).body["reservation_id"]
    other = api.call("GET", f"/v1/reservations/{rid}/events", profile="bob")
    assert other.status == 404 and "no reservation" in other.body["message"]
    assert api.call("GET", f"/v1/reservations/{rid}", profile="bob").status == 404
    unknown = api.call("GET", "/v1/reservations/00000000-0000-4000-8000-000000000000/events")
    assert unknown.status == 404
    for bad in (rid[:5], "e85-not-hex"):
        reply = api.call("GET", f"/v1/reservations/{bad}/events")
        assert reply.status == 422 and "is not a reservation id" in reply.body["message"]
        assert reply.body["field"] == "reservation_id"


def test_the_timeline_is_paged_and_its_bounds_are_422(api, local_cloud):
    rid = reserve(api, gpu_type="t4", gpu_count=1).body["reservation_id"]
    _add_steps(local_cloud, rid, 4)
    page = api.call("GET", f"/v1/reservations/{rid}/events?limit=2&offset=1").body
    assert [e["detail"] for e in page["events"]] == ["step 0", "step 1"]
    assert (page["limit"], page["offset"]) == (2, 1)
    assert api.call("GET", f"/v1/reservations/{rid}/events?offset=5").body["events"] == []
    for query in ("limit=0", "limit=501", "offset=-1", "offset=1000000001", "limit=x"):
        reply = api.call("GET", f"/v1/reservations/{rid}/events?{query}")
        assert reply.status == 422, query
        assert reply.body["field"] == query.split("=")[0], reply.body
