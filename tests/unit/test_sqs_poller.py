"""The local SQS event source runs batches at once, as Lambda's pollers do for a standard
queue (five concurrent invocations to start with), each in an environment of its own; and
`pause()` returns only once every poll in flight has ended."""

from __future__ import annotations

import json
import sys
import threading
import types
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from cdk_app.declaration import FunctionSpec
from cdk_app.specs import QueueSpec
from localcloud.deadline import Deadline
from localcloud.event_sources import CONCURRENT_BATCHES, SqsPoller
from localcloud.lambdas import LocalLambda

REGION = "us-east-2"
HANDLER = """
import poller_probe


def handler(event, context):
    poller_probe.batch([record["body"] for record in event["Records"]])
    return {"batchItemFailures": []}
"""


class Probe:
    """What the consumer's batches saw: how many ran at once, and every body."""

    def __init__(self, hold: int):
        self.running = 0
        self.most_at_once = 0
        self.bodies: list[str] = []
        self._all_in = threading.Barrier(hold, timeout=10)
        self._lock = threading.Lock()

    def batch(self, bodies: list[str]) -> None:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            self.bodies.extend(bodies)
        try:
            self._all_in.wait()  # held until `hold` batches run at once (or broken)
        except threading.BrokenBarrierError:
            pass
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture
def probe(monkeypatch):
    probe = Probe(hold=CONCURRENT_BATCHES)
    module = types.ModuleType("poller_probe")
    module.batch = probe.batch  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "poller_probe", module)
    return probe


def _consumer(tmp_path: Path) -> LocalLambda:
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "handler.py").write_text(HANDLER)
    spec = FunctionSpec(
        name="Probe", folder="probe", source_root=str(tmp_path), uses_database=False
    )
    return LocalLambda((spec,), REGION)


def test_batches_run_at_once_as_lambdas_pollers_run_them(tmp_path, probe):
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
        sent = [json.dumps({"n": n}) for n in range(CONCURRENT_BATCHES)]
        for body in sent:
            sqs.send_message(QueueUrl=url, MessageBody=body)
        # One message a batch, so the batches can only run at once if the pollers do.
        spec = QueueSpec(name="Jobs", consumer="Probe", batch_size=1)
        lambdas = _consumer(tmp_path)
        poller = SqsPoller(spec, url, sqs, lambdas, REGION).start()
        try:
            _wait_for(lambda: len(probe.bodies) == len(sent) and not probe.running)
            poller.pause()
            left = sqs.get_queue_attributes(
                QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
            )["Attributes"]["ApproximateNumberOfMessages"]
        finally:
            poller.stop(Deadline.after(10))
    assert sorted(probe.bodies) == sorted(sent)
    assert probe.most_at_once == CONCURRENT_BATCHES
    assert lambdas.environments("Probe") == CONCURRENT_BATCHES  # one environment a batch
    assert left == "0"  # every batch succeeded and was deleted


def test_pause_returns_once_no_poll_is_in_flight(tmp_path, probe):
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
        spec = QueueSpec(name="Jobs", consumer="Probe", batch_size=1)
        poller = SqsPoller(spec, url, sqs, _consumer(tmp_path), REGION).start()
        try:
            poller.pause()
            assert poller._polls == 0
            sqs.send_message(QueueUrl=url, MessageBody="{}")
            threading.Event().wait(1.5)  # longer than a long poll
            assert probe.bodies == []  # paused: the message stays on the queue
        finally:
            poller.stop(Deadline.after(10))


def _wait_for(condition, seconds: float = 20.0) -> None:
    finished = threading.Event()
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        finished.wait(0.05)
    raise AssertionError("the batches did not all finish")
