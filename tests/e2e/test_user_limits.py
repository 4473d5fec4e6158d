"""Per-user limits through the SigV4 gateway and the CLI: 429 with the limit and the usage,
nothing saved and nothing enqueued; a repeated client request id still answers 200. And
Jupyter tokens go to their owner only, never to the logs."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from gpudev.observability import logger as powertools_logger
from gpudev.settings import reset_settings_cache
from localcloud.stack import LocalCloud
from tests.e2e.jobs import count_reservations, drain_jobs, reserve

WAY_OUT = "cancel one with `gpu-dev cancel` or wait for one to end"


def _live_usage(cloud: LocalCloud, user: str = "alice") -> tuple[int, int]:
    with psycopg.connect(cloud.database_url) as conn:
        row = conn.execute(
            "SELECT count(*), coalesce(sum(gpu_count), 0) FROM reservations WHERE user_id = %s"
            " AND status IN ('pending', 'queued', 'preparing', 'active')"
            " AND cancel_requested_at IS NULL",
            (user,),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def _reservations(count: int) -> str:
    return f"{count} live reservation" + ("" if count == 1 else "s")


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Set the API's limits for one test (the shared cloud's are out of the way)."""

    def set_limits(reservations: int = 10_000, gpus: int = 100_000) -> None:
        monkeypatch.setenv("MAX_LIVE_RESERVATIONS_PER_USER", str(reservations))
        monkeypatch.setenv("MAX_GPUS_PER_USER", str(gpus))
        reset_settings_cache()

    yield set_limits
    monkeypatch.undo()
    reset_settings_cache()


def test_at_the_reservation_limit_a_submit_is_429_saving_and_enqueuing_nothing(
    api, local_cloud, limits
):
    live, _ = _live_usage(local_cloud)
    limits(reservations=live + 1)
    drain_jobs(local_cloud)
    request_id = uuid.uuid4().hex
    assert reserve(api, client_request_id=request_id).status == 202  # one under: accepted
    assert len(drain_jobs(local_cloud)) == 1
    before = count_reservations(local_cloud)
    refused = reserve(api)
    assert refused.status == 429, refused.body
    assert refused.body == {
        "message": f"you have {_reservations(live + 1)}, the limit is {live + 1}; {WAY_OUT}",
        "limit": live + 1,
    }
    assert count_reservations(local_cloud) == before
    assert drain_jobs(local_cloud) == []
    # The accepted request, repeated at the limit, is still the first reservation.
    assert reserve(api, client_request_id=request_id).status == 200
    assert drain_jobs(local_cloud) == []


def test_the_gpu_limit_counts_what_is_held_or_queued_including_multinode(api, local_cloud, limits):
    _, gpus = _live_usage(local_cloud)
    limits(gpus=gpus + 16)
    drain_jobs(local_cloud)
    assert reserve(api, gpu_type="h100", gpu_count=16).status == 202  # two whole nodes
    before = count_reservations(local_cloud)
    refused = reserve(api, gpu_type="h100", gpu_count=8)
    assert refused.status == 429
    assert refused.body["message"] == (
        f"this request needs 8 GPUs and your live reservations already hold or queue "
        f"{gpus + 16}; the limit is {gpus + 16} GPUs per user; {WAY_OUT}"
    )
    assert (refused.body["field"], refused.body["limit"]) == ("gpu_count", gpus + 16)
    assert count_reservations(local_cloud) == before
    assert [job.kind for job in drain_jobs(local_cloud)] == ["create_reservation"]
    assert reserve(api, gpu_type="cpu-x86", gpu_count=0).status == 202  # no GPUs: fits


def test_the_cli_prints_the_limit_as_its_one_line_error(api, run, local_cloud, limits):
    assert reserve(api, gpu_type="t4", gpu_count=1).status == 202
    live, _ = _live_usage(local_cloud)
    limits(reservations=live)
    before = count_reservations(local_cloud)
    result = run("reserve", "--gpu-type", "t4", "--gpus", "1", "--hours", "1", "--no-wait")
    assert result.exit_code == 1
    assert result.stderr == (
        f"error: you have {_reservations(live)}, the limit is {live}; {WAY_OUT} (HTTP 429)\n"
    )
    assert count_reservations(local_cloud) == before


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(json.dumps(record.__dict__, default=str))


def test_jupyter_tokens_reach_their_owner_and_never_the_logs(api, local_cloud, monkeypatch):
    reply = reserve(api, gpu_type="t4", gpu_count=1, jupyter=True)
    rid = reply.body["reservation_id"]
    token = uuid.uuid4().hex + uuid.uuid4().hex
    url = f"http://localhost:8888/lab?token={token}"
    with psycopg.connect(local_cloud.database_url) as conn:  # as the lifecycle records them
        conn.execute(
            "UPDATE reservations SET jupyter_token = %s, jupyter_url = %s,"
            " jupyter_available = true WHERE reservation_id = %s",
            (token, url, rid),
        )
    collect = _Collect()
    watched = [logging.getLogger(), powertools_logger._logger]
    level = powertools_logger._logger.level
    for each in watched:
        each.addHandler(collect)
    powertools_logger.setLevel(logging.DEBUG)
    try:
        owner = api.call("GET", f"/v1/reservations/{rid}")
        listed = api.call("GET", "/v1/reservations")
        on = api.call("PUT", f"/v1/reservations/{rid}/jupyter")
        off = api.call("DELETE", f"/v1/reservations/{rid}/jupyter")
        other = api.call("GET", f"/v1/reservations/{rid}", profile="bob")
        # The API's one logging path with a traceback: the jobs queue refusing a change (after
        # its commit: still 202, the outbox row waits for the relay).
        missing = local_cloud.resources.queue_urls["Jobs"] + "-missing"
        monkeypatch.setenv("JOBS_QUEUE_URL", missing)
        reset_settings_cache()
        refused = api.call("PUT", f"/v1/reservations/{rid}/jupyter")
        monkeypatch.undo()
        reset_settings_cache()
        cancel = api.call("POST", f"/v1/reservations/{rid}/cancel")
    finally:
        for each in watched:
            each.removeHandler(collect)
        powertools_logger.setLevel(level)
    assert owner.body["jupyter_url"] == url
    assert any(r["jupyter_url"] == url for r in listed.body["reservations"])
    assert (on.status, off.status, refused.status, cancel.status) == (202, 202, 202, 202)
    assert other.status == 404 and token not in json.dumps(other.body)
    assert "jupyter_token" not in owner.body
    assert any("the jobs queue refused a job" in line for line in collect.records)
    assert not [line for line in collect.records if token in line]
