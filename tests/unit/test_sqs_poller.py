"""The local SQS event source runs batches at once, as Lambda's pollers do for a standard
queue (five concurrent invocations to start with), each in an environment of its own; and
`pause()` returns only once every poll in flight has ended."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import threading
import types
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from cdk_app.declaration import FunctionSpec
from cdk_app.specs import QueueSpec
from localcloud import event_sources
from localcloud.deadline import Deadline
from localcloud.event_sources import CONCURRENT_BATCHES, SqsPoller
from localcloud.lambdas import LocalLambda
from localcloud.moto_sqs import install as install_moto_sqs_seams

REGION = "us-east-2"
HANDLER = """
import poller_probe


def handler(event, context):
    poller_probe.batch([record["body"] for record in event["Records"]])
    return {"batchItemFailures": []}
"""


class Probe:
    """What the consumer's batches saw: how many ran at once, and every body. A batch waits
    at `gate` (until `hold` batches run at once, by default) before it returns."""

    def __init__(self, hold: int):
        self.running = 0
        self.most_at_once = 0
        self.bodies: list[str] = []
        all_in = threading.Barrier(hold, timeout=10)
        self.gate = all_in.wait
        self._lock = threading.Lock()

    def batch(self, bodies: list[str]) -> None:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            self.bodies.extend(bodies)
        try:
            self.gate()
        except threading.BrokenBarrierError:
            pass
        finally:
            with self._lock:
                self.running -= 1


@contextlib.contextmanager
def moto_queues_made_safe():
    uninstall = install_moto_sqs_seams()
    try:
        yield
    finally:
        uninstall()


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


class CallsSeen:
    """The queue's client, counting `ReceiveMessage` calls in flight at once (each held a
    little, so calls that could overlap do), and whether the poller was paused when each
    receive began."""

    def __init__(self, sqs):
        self._sqs = sqs
        self._lock = threading.Lock()
        self.in_flight = 0
        self.most_at_once = 0
        self.poller = None
        self.received_while_paused = 0

    def _held(self, call, **kwargs):
        with self._lock:
            self.in_flight += 1
            self.most_at_once = max(self.most_at_once, self.in_flight)
        try:
            threading.Event().wait(0.01)
            return call(**kwargs)
        finally:
            with self._lock:
                self.in_flight -= 1

    def receive_message(self, **kwargs):
        if self.poller is not None and self.poller.paused:
            self.received_while_paused += 1
        return self._held(self._sqs.receive_message, **kwargs)

    def __getattr__(self, name):
        return getattr(self._sqs, name)


def test_the_pollers_receives_take_turns_and_each_message_goes_once(tmp_path, probe):
    """One long poll at a time (the others wait their turn), every message delivered once
    (moto's queue made safe for a receive and a delete at once: localcloud/moto_sqs.py, as
    the local cloud installs it); the batches still run at once (the test above)."""
    probe.gate = lambda: None  # batches return at once
    with moto_queues_made_safe(), mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
        sent = [json.dumps({"n": n}) for n in range(40)]
        for body in sent:
            sqs.send_message(QueueUrl=url, MessageBody=body)
        receives = CallsSeen(sqs)
        spec = QueueSpec(name="Jobs", consumer="Probe", batch_size=2)
        poller = SqsPoller(spec, url, receives, _consumer(tmp_path), REGION).start()
        try:
            _wait_for(lambda: len(probe.bodies) >= len(sent) and not probe.running)
            poller.pause()
        finally:
            poller.stop(Deadline.after(10))
    assert receives.most_at_once == 1
    assert sorted(probe.bodies) == sorted(sent)  # each once: none twice, none lost


def test_polls_waiting_their_turn_receive_nothing_once_paused(tmp_path, probe):
    """Five pollers on an empty queue take turns at one-second long polls; once paused,
    those still waiting their turn end without a receive (else `pause()` and a stop would
    wait a long poll per poller)."""
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
        calls = CallsSeen(sqs)
        poller = SqsPoller(
            QueueSpec(name="Jobs", consumer="Probe"), url, calls, _consumer(tmp_path), REGION
        )
        calls.poller = poller
        poller.start()
        try:
            _wait_for(lambda: calls.in_flight == 1)  # one long poll in flight, four waiting
            poller.pause()
        finally:
            poller.stop(Deadline.after(10))
    assert calls.received_while_paused == 0


def test_pause_returns_only_once_the_batch_in_flight_has_ended(tmp_path, probe):
    released = threading.Event()
    probe.gate = lambda: released.wait(10)
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
        spec = QueueSpec(name="Jobs", consumer="Probe", batch_size=1)
        poller = SqsPoller(spec, url, sqs, _consumer(tmp_path), REGION).start()
        try:
            sqs.send_message(QueueUrl=url, MessageBody="first")
            _wait_for(lambda: probe.running == 1)
            pausing = threading.Thread(target=poller.pause)
            pausing.start()
            pausing.join(0.5)
            assert pausing.is_alive()  # the batch in flight holds it
            released.set()
            pausing.join(10)
            assert not pausing.is_alive()
            sqs.send_message(QueueUrl=url, MessageBody="second")
            threading.Event().wait(1.5)  # longer than a long poll
        finally:
            poller.stop(Deadline.after(10))
    assert probe.bodies == ["first"]  # paused: the second stays on the queue


def _wait_for(condition, seconds: float = 20.0) -> None:
    finished = threading.Event()
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        finished.wait(0.05)
    raise AssertionError("the batches did not all finish")


def test_a_queue_that_cannot_be_polled_is_logged_once_then_a_line_now_and_then(
    tmp_path, monkeypatch, caplog
):
    """SQS gone (its process dead, the queue deleted): the first failure of the streak with
    its traceback, then one line every FAILURES_PER_WARNING failed polls, not five
    tracebacks a second; and one line when polls work again."""
    monkeypatch.setattr(event_sources, "FAILED_POLL_PAUSE_SECONDS", 0.001)
    caplog.set_level(logging.INFO, logger="localcloud.events")
    with mock_aws():
        sqs = boto3.client("sqs", region_name=REGION)
        url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
        spec = QueueSpec(name="Jobs", consumer="Probe", batch_size=1)
        poller = SqsPoller(spec, url, sqs, _consumer(tmp_path), REGION)
        sqs.delete_queue(QueueUrl=url)
        poller.start()
        try:
            _wait_for(lambda: len(_warnings(caplog)) >= 2)
            sqs.create_queue(QueueName="jobs")
            _wait_for(lambda: any("works again" in r.message for r in caplog.records))
        finally:
            poller.stop(Deadline.after(10))
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None
    assert "does not exist" in str(errors[0].exc_info[1])
    assert [w.message.split(" (")[1].split(" ")[0] for w in _warnings(caplog)[:2]] == [
        str(event_sources.FAILURES_PER_WARNING),
        str(2 * event_sources.FAILURES_PER_WARNING),
    ]


def _warnings(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.WARNING]
