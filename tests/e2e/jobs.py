"""Helpers for API tests: what the database holds and what the jobs queue received."""

from __future__ import annotations

from typing import Any

import psycopg

from gpudev.jobs import parse_job
from localcloud.stack import LocalCloud
from tests.support.api import ApiClient


def count_reservations(cloud: LocalCloud) -> int:
    with psycopg.connect(cloud.database_url) as conn:
        row = conn.execute("SELECT count(*) FROM reservations").fetchone()
    return int(row[0]) if row else 0


def drain_jobs(cloud: LocalCloud) -> list[Any]:
    sqs = cloud.aws.client("sqs")  # type: ignore[union-attr]
    url = cloud.resources.queue_urls["Jobs"]
    jobs = []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        for message in messages:
            jobs.append(parse_job(message["Body"]))
            sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return jobs


def reserve(api: ApiClient, profile: str = "alice", **fields: Any) -> Any:
    body = {"gpu_type": "h100", "gpu_count": 4, "hours": 2, "github_user": "alice", **fields}
    return api.call("POST", "/v1/reservations", profile=profile, body=body)
