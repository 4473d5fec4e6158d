"""Through the real execution: an operator (carol, the local cloud's admin role) force-cancels
alice's active reservation; it ends by the owner's path, with the operator's reason as its
final detail in the status history; alice's usage then counts exactly the GPU-hours it held
(grant to end, in wall-clock hours); the operator reads its timeline as alice does."""

from __future__ import annotations

from urllib.parse import urlencode

import psycopg

from tests.lifecycle.helpers import assert_nothing_left, reserve, wait_for_status


def test_an_operator_force_cancels_and_usage_counts_what_was_held(api, local_cloud):
    rid = reserve(api, gpu_type="t4", gpu_count=2, hours=1)["reservation_id"]
    wait_for_status(api, rid, "active")
    reply = api.call(
        "POST", f"/v1/admin/reservations/{rid}/cancel", "carol", {"reason": "maintenance"}
    )
    assert reply.status == 202, reply.body
    ended = wait_for_status(api, rid, "cancelled")
    reason = "cancelled by operator carol@example.com: maintenance"
    assert ended["current_detailed_status"] == reason
    assert_nothing_left(local_cloud, rid)
    with psycopg.connect(local_cloud.database_url) as conn:
        last = conn.execute(
            "SELECT to_status, detail FROM reservation_events WHERE reservation_id = %s "
            "ORDER BY event_id DESC LIMIT 1",
            (rid,),
        ).fetchone()
        held, since, until = conn.execute(
            "SELECT 2 * extract(epoch FROM reservation_ended - granted_at) / 3600,"
            " created_at - interval '1 second', reservation_ended + interval '1 second'"
            " FROM reservations WHERE reservation_id = %s",
            (rid,),
        ).fetchone()
    assert last == ("cancelled", reason)

    # The operator reads alice's timeline through the admin route: the owner's answer, the
    # ending with the operator's reason last; bob (not an operator) is refused there, and
    # finds nothing on the owner's route.
    own = api.call("GET", f"/v1/reservations/{rid}/events").body
    seen = api.call("GET", f"/v1/admin/reservations/{rid[:8]}/events", "carol")
    assert seen.status == 200 and seen.body == own, seen.body
    assert seen.body["events"][-1]["detail"] == reason
    paged = api.call("GET", f"/v1/admin/reservations/{rid}/events?limit=2&offset=1", "carol")
    assert paged.body["events"] == own["events"][1:3]
    assert api.call("GET", f"/v1/admin/reservations/{rid}/events", "bob").status == 403
    assert api.call("GET", f"/v1/reservations/{rid}/events", "bob").status == 404
    unknown = "00000000-0000-4000-8000-000000000000"
    assert api.call("GET", f"/v1/admin/reservations/{unknown}/events", "carol").status == 404
    assert api.call("GET", "/v1/admin/reservations/not-an-id/events", "carol").status == 422
    too_many = api.call("GET", f"/v1/admin/reservations/{rid}/events?limit=501", "carol")
    assert too_many.status == 422

    # the window holds this reservation (alice's others of the run may overlap it too)
    query = urlencode({"since": since.isoformat(), "until": until.isoformat(), "by": "type"})
    report = api.call("GET", f"/v1/usage?{query}").body
    t4 = {t["key"]: t["gpu_hours"] for t in report["totals"]}["t4"]
    held = float(held)  # numeric from PostgreSQL
    assert held > 0 and t4 >= held - 1e-4  # totals are rounded to 4 decimals
    outcomes = {(o["outcome"], o["reason"]) for o in report["outcomes"]}
    assert ("cancelled", reason) in outcomes
