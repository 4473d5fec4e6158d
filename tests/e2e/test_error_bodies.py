"""Every refusal, through the SigV4 gateway, has one body: a sentence (`message`) and where
it applies `field`, `allowed`, `limit` and `hint` — validation failures, malformed ids,
unknown routes, methods a route lacks, and the gateway's own 403 and 413. Nothing refused is
written."""

from __future__ import annotations

import pytest

from tests.e2e.jobs import count_reservations, drain_jobs, reserve


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"hours": 0},
            "hours",
            "hours must be at least 5 minutes (0.0833 h); got 0 "
            "(allowed: 5 minutes (0.0833 h) to 24 hours)",
        ),
        ({"hours": -1}, "hours", "hours must be at least 5 minutes (0.0833 h); got -1"),
        ({"hours": "soon"}, "hours", "hours must be a number; got 'soon'"),
        ({"gpu_count": -1}, "gpu_count", "the GPU count must be at least 0 GPUs; got -1"),
        (
            {"gpu_count": 99999999999999999999},
            "gpu_count",
            "the GPU count must be at most 64 GPUs; got 99999999999999999999",
        ),
        ({"gpu_count": 2.5}, "gpu_count", "the GPU count must be a whole number; got 2.5"),
        ({"name": "n" * 3000}, "name", "name must be at most 63 characters; got 'nnnn"),
        ({"gpu_type": ""}, "gpu_type", "the GPU type must not be empty; got ''"),
        ({"jupyter": "maybe"}, "jupyter", "jupyter must be true or false; got 'maybe'"),
    ],
)
def test_validation_failures_are_sentences_naming_the_field_and_write_nothing(
    api, local_cloud, fields, field, message
):
    drain_jobs(local_cloud)
    before = count_reservations(local_cloud)
    reply = reserve(api, **fields)
    assert reply.status == 422, reply.body
    assert reply.body["field"] == field and reply.body["allowed"]
    assert reply.body["message"].startswith(message), reply.body
    assert "None" not in reply.body["message"] and len(reply.body["message"]) < 300
    assert count_reservations(local_cloud) == before and drain_jobs(local_cloud) == []


def test_not_a_number_hours_are_refused_as_not_finite(api):
    # JSON has no NaN, but Python's json (which powertools parses with) reads the token.
    data = b'{"gpu_type": "h100", "gpu_count": 4, "hours": NaN, "github_user": "alice"}'
    headers = api.signed_headers("POST", "/v1/reservations", data, api.credentials("alice"))
    reply = api.send("POST", "/v1/reservations", headers, data)
    assert reply.status == 422 and reply.body["message"].startswith("hours must be a finite number")


def test_the_stated_minimum_duration_is_accepted_exactly(api):
    reply = reserve(api, hours=0.0833)
    assert reply.status == 202, reply.body
    assert reply.body["duration_hours"] == 0.0833


def test_a_long_input_is_cut_short_in_the_message(api):
    reply = reserve(api, github_user="g" * 5000)
    assert reply.status == 422
    assert reply.body["field"] == "github_user"
    assert "(5,000 characters)" in reply.body["message"] and len(reply.body["message"]) < 200


def test_a_malformed_reservation_id_is_422_not_404(api):
    for method, path in (
        ("GET", "/v1/reservations/e85"),
        ("POST", "/v1/reservations/not-a-reservation-id/cancel"),
        ("POST", "/v1/reservations/zzzzzzzz/extend"),
    ):
        body = {"hours": 1} if path.endswith("extend") else None
        reply = api.call(method, path, body=body)
        assert reply.status == 422, (path, reply.body)
        assert "is not a reservation id" in reply.body["message"]
        assert reply.body["field"] == "reservation_id" and "gpu-dev list" in reply.body["hint"]


def test_a_body_that_is_not_a_json_object_is_a_sentence(api):
    for data, message in (
        (b"[1, 2]", "the request body must be a JSON object"),
        (b"{not json", "the request body is not valid JSON"),
    ):
        headers = api.signed_headers("POST", "/v1/reservations", data, api.credentials("alice"))
        reply = api.send("POST", "/v1/reservations", headers, data)
        assert reply.status == 422 and reply.body == {"message": message} | (
            {"allowed": "a JSON object"} if data.startswith(b"[") else {}
        )


def test_unknown_routes_are_404_and_missing_methods_405_in_the_same_shape(api):
    unknown = api.call("GET", "/v1/nothing-here")
    assert unknown.status == 404
    assert unknown.body["message"] == "no such route: GET '/v1/nothing-here'"
    assert set(unknown.body) == {"message", "hint"}
    wrong = api.call("DELETE", "/v1/gpu/availability")
    assert wrong.status == 405 and wrong.headers["Allow"] == "GET"
    assert wrong.body == {
        "message": "'/v1/gpu/availability' does not take DELETE; it takes GET",
        "allowed": "GET",
    }


def test_the_gateways_own_refusals_share_the_shape(api):
    unsigned = api.call("GET", "/v1/me", profile=None)
    assert unsigned.status == 403 and set(unsigned.body) == {"message"}
    too_big = b'{"name": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    headers = api.signed_headers("POST", "/v1/reservations", too_big, api.credentials("alice"))
    reply = api.send("POST", "/v1/reservations", headers, too_big)
    assert (reply.status, reply.body) == (413, {"message": "Request Too Long"})


# Shapes the OpenAPI document does not allow: a clear 4xx, and nothing written.


def _disk_names(local_cloud) -> list[str]:
    import psycopg

    with psycopg.connect(local_cloud.database_url) as conn:
        return [r[0] for r in conn.execute("SELECT disk_name FROM disks ORDER BY 1")]


def _send(api, method, path, data=b"", content_type="application/json"):
    headers = api.signed_headers(
        method,
        path,
        data or None,
        api.credentials("alice"),
        extra_headers={"Content-Type": content_type},
    )
    return api.send(method, path, headers, data or None)


@pytest.mark.parametrize(
    ("method", "path", "data", "content_type", "status"),
    [
        ("POST", "/v1/reservations", b'{"gpu_type": "h100\xff"}', "application/json", 400),
        ("POST", "/v1/reservations", b"gpu_type=h100", "multipart/form-data", 415),
        ("POST", "/v1/reservations", b"gpu_type=h100", "application/x-www-form-urlencoded", 415),
        ("POST", "/v1/disks", b'{"disk_name": "ok"}', "text/plain", 415),
        ("POST", "/v1/disks/%0A", b'{"disk_name": "nl"}', "application/json", 404),
        ("POST", "/v1/disks%00", b'{"disk_name": "nul"}', "application/json", 404),
        ("GET", "/v1/reservations/%0A", b"", "application/json", 404),
        ("GET", "/v1/reservations?offset=9223372036854775808", b"", "application/json", 422),
    ],
)
def test_a_request_outside_the_document_is_a_4xx_in_the_one_shape_and_writes_nothing(
    api, local_cloud, method, path, data, content_type, status
):
    drain_jobs(local_cloud)
    before = count_reservations(local_cloud), _disk_names(local_cloud)
    reply = _send(api, method, path, data, content_type)
    assert reply.status == status, reply.body
    assert set(reply.body) <= {"message", "field", "allowed", "hint"} and reply.body["message"]
    assert (count_reservations(local_cloud), _disk_names(local_cloud)) == before
    assert drain_jobs(local_cloud) == []


@pytest.mark.parametrize("method", ["HEAD", "OPTIONS"])
def test_signed_head_and_options_reach_the_function_as_through_any(api, local_cloud, method):
    before = local_cloud.lambdas.invocations["Api"]
    reply = _send(api, method, "/v1/reservations")
    assert reply.status == 405 and reply.headers["Allow"] == "GET, POST"
    assert local_cloud.lambdas.invocations["Api"] == before + 1
    if method == "OPTIONS":
        assert reply.body["allowed"] == "GET, POST"


def test_a_method_outside_any_is_api_gateways_403(api, local_cloud):
    before = local_cloud.lambdas.invocations["Api"]
    reply = _send(api, "TRACE", "/v1/reservations")
    assert (reply.status, reply.body) == (403, {"message": "Missing Authentication Token"})
    assert local_cloud.lambdas.invocations["Api"] == before
