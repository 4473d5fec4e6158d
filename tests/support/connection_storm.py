"""A backlog of jobs after a database outage, drained by the jobs consumer in execution
environments of its own (bench/connection_storm.py; tests/e2e/test_connection_storm.py).

A local cloud in a child process (`python -m localcloud --function-processes=N`: every
function but the API in up to N OS processes, each with its own connection pool, as Lambda
runs them) is put through a database outage (`database-outage`: new connections refused,
open ones ended). While it lasts, `jobs` cancel jobs are put on the jobs queue, each batch
held back (SQS `DelaySeconds`) until just after the outage ends (the outage must outlast
the sending: moto's SQS takes about 20 ms a message here): the moment the database is back, the
whole backlog is waiting. Each job reads its reservation's row (none: "nothing to wake"), so
every job needs a connection.

A sampler on the `postgres` database (the outage closes only ours) counts the client
connections to ours every 20 ms, per `application_name` (each function's connections carry
its deployed name: DB_APPLICATION_NAME). The report gives the peaks, how long the backlog
took to drain after the outage, and what the dead-letter queue holds then.
"""

from __future__ import annotations

import json
import math
import signal
import threading
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from gpudev.jobs import CancelReservationJob
from localcloud.fault_control import TOKEN_HEADER
from tests.support.local_cloud_process import LocalCloudProcess, free_ports

SAMPLE_SECONDS = 0.02
DRAIN_LIMIT_SECONDS = 900.0
CONSUMER = "gpudev-jobs-consumer"


@dataclass
class StormReport:
    jobs: int
    outage_seconds: float
    drain_seconds: float = 0.0  # from the outage's end until the queue held nothing
    peak_connections: int = 0  # every client connection to the database at once
    peak_by_name: dict[str, int] = field(default_factory=dict)  # per application_name
    dead_letters: int = 0
    consumer_processes: int = 0  # the consumer's processes alive at the end
    samples: int = 0


class _Sampler:
    def __init__(self, database_url: str) -> None:
        self._conninfo = make_conninfo(database_url, dbname="postgres")
        self._database = str(conninfo_to_dict(database_url)["dbname"])
        self._stop = threading.Event()
        self.peak = 0
        self.peak_by_name: Counter[str] = Counter()
        self.samples = 0
        self._thread = threading.Thread(target=self._run, name="storm-sampler", daemon=True)

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        with psycopg.connect(self._conninfo, autocommit=True) as conn:
            while not self._stop.is_set():
                rows = conn.execute(
                    "SELECT coalesce(application_name, ''), count(*) FROM pg_stat_activity"
                    " WHERE datname = %s AND backend_type = 'client backend'"
                    " GROUP BY 1",
                    (self._database,),
                ).fetchall()
                self.peak = max(self.peak, sum(n for _, n in rows))
                for name, count in rows:
                    self.peak_by_name[name] = max(self.peak_by_name[name], count)
                self.samples += 1
                self._stop.wait(SAMPLE_SECONDS)


def _fault(stack: dict[str, Any], seconds: float) -> None:
    request = urllib.request.Request(
        f"{stack['fault_control_url']}/faults",
        data=json.dumps({"fault": "database-outage", "seconds": seconds}).encode(),
        method="POST",
        headers={TOKEN_HEADER: stack["fault_control_token"]},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        reply.read()


def _queued(sqs: Any, url: str) -> int:
    names = [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    ]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(attributes.get(name, 0)) for name in names)


def _send_held_back(sqs: Any, url: str, jobs: int, visible_at: float) -> None:
    """Each batch held back until just after `visible_at` (monotonic): the backlog appears
    at once, whenever each batch was sent."""
    for first in range(0, jobs, 10):
        delay_seconds = math.ceil(visible_at - time.monotonic()) + 1
        assert 0 < delay_seconds <= 900, "the outage ended before the jobs were sent"
        entries = []
        for i in range(first, min(first + 10, jobs)):
            job = CancelReservationJob(reservation_id=uuid.uuid4(), user_id="alice")
            entries.append(
                {
                    "Id": str(i),
                    "MessageBody": job.model_dump_json(),
                    "DelaySeconds": delay_seconds,
                    "MessageAttributes": {"kind": {"DataType": "String", "StringValue": job.kind}},
                }
            )
        failed = sqs.send_message_batch(QueueUrl=url, Entries=entries).get("Failed")
        assert not failed, failed


def _drain_output(cloud: LocalCloudProcess) -> threading.Thread:
    """Read the cloud's output until it ends: a pipe nobody reads fills (64 KiB of log
    lines) and blocks the cloud's next write, pollers and all."""

    def read() -> None:
        assert cloud.process.stdout is not None
        for line in cloud.process.stdout:
            cloud.output.append(line)

    thread = threading.Thread(target=read, name="storm-cloud-output", daemon=True)
    thread.start()
    return thread


def _stop(cloud: LocalCloudProcess, output: threading.Thread) -> None:
    """Ctrl+C, as `make run` is stopped: the cloud ends its function processes and its
    PostgreSQL itself (a kill would leave them behind)."""
    cloud.process.send_signal(signal.SIGINT)
    try:
        cloud.process.wait(timeout=60)
    finally:
        output.join(10)


def run(state_dir: Path, jobs: int, outage_seconds: float, processes: int) -> StormReport:
    report = StormReport(jobs, outage_seconds)
    cloud = LocalCloudProcess(state_dir, free_ports(), f"--function-processes={processes}")
    try:
        stack = cloud.wait_until_up()
        output = _drain_output(cloud)
        sqs = boto3.client(
            "sqs",
            endpoint_url=stack["sqs_endpoint_url"],
            region_name=stack["region"],
            aws_access_key_id="AKIALOCALADMIN000000",
            aws_secret_access_key="local-admin-secret",
        )
        jobs_url = stack["queues"]["Jobs"]
        redrive = sqs.get_queue_attributes(QueueUrl=jobs_url, AttributeNames=["RedrivePolicy"])
        dlq_name = json.loads(redrive["Attributes"]["RedrivePolicy"])["deadLetterTargetArn"]
        dlq_url = sqs.get_queue_url(QueueName=dlq_name.rsplit(":", 1)[1])["QueueUrl"]
        with _Sampler(stack["database_url"]) as sampler:
            _fault(stack, outage_seconds)
            outage_ends = time.monotonic() + outage_seconds
            _send_held_back(sqs, jobs_url, jobs, outage_ends)
            time.sleep(max(0.0, outage_ends - time.monotonic()))
            deadline = outage_ends + DRAIN_LIMIT_SECONDS
            while _queued(sqs, jobs_url):
                assert time.monotonic() < deadline, "the backlog did not drain"
                time.sleep(0.2)
            report.drain_seconds = time.monotonic() - outage_ends
        report.peak_connections = sampler.peak
        report.peak_by_name = dict(sampler.peak_by_name)
        report.samples = sampler.samples
        report.dead_letters = _queued(sqs, dlq_url)
        report.consumer_processes = sum(
            1 for name in cloud.serving_processes().values() if name == "JobsConsumer"
        )
        _stop(cloud, output)
    finally:
        cloud.kill()
    return report
