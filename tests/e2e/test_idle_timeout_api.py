"""The idle timeout through the SigV4 gateway and the real CLI: `reserve --idle-timeout`
and `edit --idle-timeout` take 2h, 90m or none, default to the deployment's; 0, over the
maximum or garbage are refused with a sentence (422) and nothing is written; an ended
reservation's timeout cannot change (409)."""

from __future__ import annotations

import psycopg
import pytest

from tests.e2e.jobs import drain_jobs, reserve
from tests.support.databases import mark_ended

BAD = [
    ("0", "idle timeout '0' is too short"),
    ("0m", "idle timeout '0m' is too short"),
    ("13h", "idle timeout '13h' is over this deployment's maximum of 12 h"),
    ("soon", "idle timeout 'soon' is not a duration: write it as 2h, 90m or none"),
    ("-1h", "is not a duration"),
]


def _count(cloud) -> int:
    with psycopg.connect(cloud.database_url) as conn:
        row = conn.execute("SELECT count(*) FROM reservations").fetchone()
    assert row is not None
    return int(row[0])


def test_reserve_takes_a_duration_none_or_the_default(api, local_cloud):
    given = reserve(api, idle_timeout="90m")
    assert given.status == 202 and given.body["idle_timeout_minutes"] == 90
    never = reserve(api, idle_timeout="none")
    assert never.status == 202 and never.body["idle_timeout_minutes"] is None
    default = reserve(api)
    assert default.status == 202 and default.body["idle_timeout_minutes"] == 120
    drain_jobs(local_cloud)


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_idle_timeout_at_reserve_is_refused_and_nothing_is_written(
    api, local_cloud, text, message
):
    before = _count(local_cloud)
    reply = reserve(api, idle_timeout=text)
    assert reply.status == 422, reply.body
    assert message in reply.body["message"]
    assert reply.body["field"] == "idle_timeout"
    assert _count(local_cloud) == before
    assert drain_jobs(local_cloud) == []


@pytest.mark.parametrize(("text", "message"), BAD)
def test_a_bad_idle_timeout_at_edit_is_refused_and_nothing_is_written(
    api, local_cloud, text, message
):
    rid = reserve(api, idle_timeout="2h").body["reservation_id"]
    drain_jobs(local_cloud)
    reply = api.call("PUT", f"/v1/reservations/{rid}/idle-timeout", body={"idle_timeout": text})
    assert reply.status == 422, reply.body
    assert message in reply.body["message"]
    assert api.call("GET", f"/v1/reservations/{rid}").body["idle_timeout_minutes"] == 120


def test_edit_sets_the_timeout_and_an_ended_one_cannot_change(api, local_cloud):
    rid = reserve(api).body["reservation_id"]
    reply = api.call(
        "PUT", f"/v1/reservations/{rid[:8]}/idle-timeout", body={"idle_timeout": "none"}
    )
    assert reply.status == 200 and reply.body["idle_timeout_minutes"] is None
    mark_ended(local_cloud.database_url, rid, "expired")
    reply = api.call("PUT", f"/v1/reservations/{rid}/idle-timeout", body={"idle_timeout": "1h"})
    assert reply.status == 409 and "it is expired" in reply.body["message"]
    assert api.call("GET", f"/v1/reservations/{rid}").body["idle_timeout_minutes"] is None
    drain_jobs(local_cloud)


def test_someone_elses_reservation_is_not_found(api, local_cloud):
    rid = reserve(api).body["reservation_id"]
    reply = api.call(
        "PUT", f"/v1/reservations/{rid}/idle-timeout", profile="bob", body={"idle_timeout": "1h"}
    )
    assert reply.status == 404
    assert api.call("GET", f"/v1/reservations/{rid}").body["idle_timeout_minutes"] == 120
    drain_jobs(local_cloud)


def test_the_cli_reserves_and_edits_with_an_idle_timeout_and_says_what_is_wrong(run, local_cloud):
    made = run("reserve", "-t", "h100", "-g", "4", "-h", "2", "--idle-timeout", "45m", "--no-wait")
    assert made.exit_code == 0, made.output
    rid8 = made.output.split()[1]
    refused = run("reserve", "-t", "h100", "-g", "4", "-h", "2", "--idle-timeout", "0", "--no-wait")
    assert refused.exit_code != 0
    assert "idle timeout '0' is too short" in refused.output
    assert "Traceback" not in refused.output
    edited = run("edit", rid8, "--idle-timeout", "none")
    assert edited.exit_code == 0, edited.output
    assert f"Idle timeout of {rid8}: never (none)" in edited.output
    shown = run("show", rid8)
    assert "Idle timeout: never (none)" in shown.output
    over = run("edit", rid8, "--idle-timeout", "99h")
    assert over.exit_code != 0 and "over this deployment's maximum of 12 h" in over.output
    drain_jobs(local_cloud)
