"""`gpu-dev usage` and `gpu-dev admin usage` through the real SigV4 gateway against the local
cloud: a hand-counted window (in 2020, so nothing else of the test run falls in it) of a
reservation crossing midnight, one cancelled while queued, a multinode one; the chart read
back; the operator's report for everyone; a non-operator refused."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from localcloud.stack import LocalCloud

DAY = datetime(2020, 1, 6, tzinfo=UTC)
WINDOW = ["--since", "2020-01-06T00:00:00+00:00", "--until", "2020-01-09T00:00:00+00:00"]


def at(day: int, hour: float) -> datetime:
    return DAY + timedelta(days=day, hours=hour)


@pytest.fixture
def recorded(local_cloud: LocalCloud, run) -> Iterator[None]:
    for profile in ("alice", "bob"):  # bound to their principals by their first call
        assert run("usage", profile=profile).exit_code == 0
    rows = [  # user, type, GPUs, nodes, created, granted, ended, status, reason
        ("alice", "h100", 4, 1, at(0, 21), at(0, 22), at(1, 2), "expired", None),
        ("alice", "h100", 8, 1, at(1, 9), None, at(1, 10), "cancelled", "cancelled by the user"),
        ("bob", "h100", 16, 2, at(1, 6), at(1, 6.5), at(1, 8), "failed", "pod lost"),
    ]
    ids = [uuid.uuid4() for _ in rows]
    with psycopg.connect(local_cloud.database_url) as conn:
        for rid, (user, kind, gpus, nodes, created, granted, ended, status, reason) in zip(
            ids, rows, strict=True
        ):
            conn.execute(
                """INSERT INTO reservations (reservation_id, user_id, status, gpu_type,
                       gpu_count, total_nodes, duration_hours, created_at, granted_at,
                       launched_at, expires_at, reservation_ended, failure_reason,
                       current_detailed_status)
                   VALUES (%s, %s, %s, %s, %s, %s, 24, %s, %s, %s, %s, %s, %s, %s)""",
                (
                    rid, user, status, kind, gpus, nodes, created, granted, granted,
                    granted + timedelta(hours=24) if granted else None, ended,
                    (reason or status) if ended else None, reason,
                ),
            )  # fmt: skip
    yield
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute("DELETE FROM reservations WHERE reservation_id = ANY(%s)", (ids,))


def test_my_usage_matches_a_hand_count_and_draws_its_chart(recorded: None, run, tmp_path: Path):
    from matplotlib.image import imread

    chart = tmp_path / "usage.png"
    result = run("--output", "json", "usage", *WINDOW, "--chart", str(chart))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["scope"] == "alice" and report["utilisation"] == []
    # 22:00-24:00 and 00:00-02:00 of 4 GPUs; the cancelled one held nothing
    assert report["totals"] == [
        {"key": "2020-01-06", "gpu_hours": 8.0},
        {"key": "2020-01-07", "gpu_hours": 8.0},
    ]
    outcomes = {(o["outcome"], o["while_queued"]): o["reservations"] for o in report["outcomes"]}
    assert outcomes == {("expired", False): 1, ("cancelled", True): 1}
    assert imread(chart).shape == (800, 1100, 4)

    csv = run("usage", *WINDOW, "--by", "type", "--output", "csv")
    assert csv.stdout == "type,gpu_hours\nh100,16.0000\n"


def test_the_operator_sees_everyone_and_others_are_refused(recorded: None, run):
    result = run("--output", "json", "admin", "usage", *WINDOW, profile="carol")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["scope"] == "everyone"
    # bob's multinode reservation: 1.5 h on two nodes of 8 GPUs
    assert report["totals"] == [
        {"key": "bob", "gpu_hours": 24.0},
        {"key": "alice", "gpu_hours": 16.0},
    ]
    (h100,) = [w for w in report["queue_waits"] if w["gpu_type"] == "h100"]
    assert (h100["granted"], h100["never_granted"], h100["max_minutes"]) == (2, 1, 60.0)

    refused = run("admin", "usage", *WINDOW)
    assert refused.exit_code == 1
    assert refused.stderr.startswith("error: ") and "operator route" in refused.stderr
    listed = run("--output", "json", "admin", "list", profile="carol")
    assert listed.exit_code == 0 and isinstance(json.loads(listed.stdout), list)


def test_the_operator_peeks_at_the_dead_letter_queue_leaving_it_there(local_cloud: LocalCloud, run):
    sqs = local_cloud.aws.client("sqs")  # type: ignore[union-attr]
    url = local_cloud.resources.dead_letter_queue_urls["Jobs"]
    job = {"kind": "cancel_reservation", "reservation_id": str(uuid.uuid4()), "user_id": "x"}
    sent = sqs.send_message(QueueUrl=url, MessageBody=json.dumps(job))["MessageId"]
    try:
        for _ in range(2):  # a peek leaves the message in the queue
            result = run("--output", "json", "admin", "dlq", profile="carol")
            assert result.exit_code == 0, result.output
            letters = json.loads(result.stdout)
            assert letters["depth"] >= 1
            (mine,) = [m for m in letters["messages"] if m["message_id"] == sent]
            assert mine["body"] == job and mine["sent_at"]
        table = run("admin", "dlq", profile="carol")
        assert "Jobs dead-letter queue" in table.stdout and "cancel_reservation" in table.stdout
        assert run("admin", "dlq").exit_code == 1  # alice is no operator
    finally:
        for message in sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=5
        ).get("Messages", []):
            if message["MessageId"] == sent:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
