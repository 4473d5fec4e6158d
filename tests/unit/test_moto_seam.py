"""Canary: the local cloud patches private moto functions. If moto moves them, fail here,
loudly, rather than with mysterious Step Functions errors in the e2e tier."""

import gc
import json
import threading
from importlib.metadata import version
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from moto.sqs.models import sqs_backends
from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
from moto.stepfunctions.parser.backend import execution_worker

from localcloud.moto_asl import (
    EXPECTED_ENTRYPOINT_SIGNATURE,
    entrypoint_seam_signature,
    install,
    settle_heap_keys,
    shareable,
)
from localcloud.moto_lambda import (
    EXPECTED_CLIENT_SIGNATURE,
    EXPECTED_SIGNATURE,
    client_seam_signature,
    seam_signature,
)
from localcloud.moto_sqs import (
    EXPECTED_RECEIVE_SIGNATURE,
    EXPECTED_RETENTION_SIGNATURE,
    receive_seam_signatures,
    retention_seam_signature,
)
from localcloud.moto_sqs import install as sqs_seam_install
from localcloud.moto_stop import EXPECTED_STOP_SIGNATURE, stop_seam_signature
from localcloud.moto_stop import install as stop_seam_install
from tests.support.step_functions import create_machine, finished_execution
from tests.support.waiting import wait_for


def test_moto_is_the_pinned_version():
    assert version("moto") == "5.2.5", "re-verify localcloud/moto_lambda.py, then re-pin"


def test_the_private_lambda_seam_has_the_shape_we_patch():
    assert seam_signature() == EXPECTED_SIGNATURE


def test_the_step_functions_client_factory_has_the_shape_we_replace():
    assert client_seam_signature() == EXPECTED_CLIENT_SIGNATURE


def test_the_step_functions_program_seam_has_the_shape_we_replace():
    assert entrypoint_seam_signature() == EXPECTED_ENTRYPOINT_SIGNATURE


RESERVATION_ASL = Path(__file__).parents[2] / "statemachines" / "reservation.asl.json"


def test_our_reservation_machine_is_shared_and_a_parallel_one_is_not():
    assert shareable(RESERVATION_ASL.read_text())
    parallel = {
        "StartAt": "Both",
        "States": {
            "Both": {
                "Type": "Parallel",
                "End": True,
                "Branches": [{"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}],
            }
        },
    }
    nested_map = {
        "StartAt": "Outer",
        "States": {
            "Outer": {
                "Type": "Pass",
                "Next": "Each",
            },
            "Each": {
                "Type": "Map",
                "End": True,
                "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}},
            },
        },
    }
    assert not shareable(json.dumps(parallel))
    assert not shareable(json.dumps(nested_map))
    assert not shareable("{not json")


RETRYING = {
    "StartAt": "Fails",
    "States": {
        "Fails": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"FunctionName": "arn:aws:lambda:us-east-1:123456789012:function:gone"},
            "Retry": [
                {
                    "ErrorEquals": ["States.ALL"],
                    "IntervalSeconds": 1,
                    "MaxAttempts": 2,
                    "BackoffRate": 1.0,
                }
            ],
            "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}],
            "End": True,
        },
        "Caught": {"Type": "Pass", "Result": {"caught": True}, "End": True},
    },
}


def test_executions_of_one_definition_share_one_parse_and_keep_their_own_state(monkeypatch):
    """Two executions at once of a machine with a Retry (whose counter lives in the
    execution's heap under the component's key) each retry twice and catch: they share one
    parsed program and not their state."""
    parses = []
    real_parse = execution_worker.AmazonStateLanguageParser.parse

    def counted(definition, *args, **kwargs):
        parses.append(definition)
        return real_parse(definition, *args, **kwargs)

    monkeypatch.setattr(execution_worker.AmazonStateLanguageParser, "parse", staticmethod(counted))
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    uninstall = install()
    try:
        with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
            sfn = boto3.client("stepfunctions", region_name="us-east-1")
            arn = create_machine(sfn, "retrying", RETRYING)
            parses.clear()  # creating it validated the definition once
            runs = [sfn.start_execution(stateMachineArn=arn)["executionArn"] for _ in range(2)]
            finished = [finished_execution(sfn, run) for run in runs]
            events = [sfn.get_execution_history(executionArn=run)["events"] for run in runs]
    finally:
        uninstall()
    assert [f["status"] for f in finished] == ["SUCCEEDED", "SUCCEEDED"]
    assert [json.loads(f["output"]) for f in finished] == [{"caught": True}] * 2
    attempts = [sum(e["type"] == "TaskScheduled" for e in history) for history in events]
    assert attempts == [3, 3]  # the first try and two retries each: no counter shared
    assert len(parses) == 1


def test_every_component_of_a_shared_program_has_its_heap_key_before_it_is_shared():
    """moto makes a component's key at its first read: two executions reading it at once
    could each make one. Settled, every key exists before any execution reads it. The
    components are found here by the collector's own references, not by the seam's walk,
    so a component the walk missed would show."""
    program = execution_worker.AmazonStateLanguageParser.parse(RESERVATION_ASL.read_text())[0]
    evaluated = _reachable_eval_components(program)
    assert len(evaluated) > 100
    assert any(c._EvalComponent__heap_key is None for c in evaluated)  # moto: made lazily
    settle_heap_keys(program)
    keys = [c._EvalComponent__heap_key for c in evaluated]
    assert None not in keys
    assert len(set(keys)) == len(keys)


def _reachable_eval_components(root):
    seen, pending, found = set(), [root], []
    while pending:
        value = pending.pop()
        if id(value) in seen or isinstance(value, type | str | bytes | int | float):
            continue
        seen.add(id(value))
        if isinstance(value, EvalComponent):
            found.append(value)
        pending.extend(gc.get_referents(value))
    return found


def test_the_sqs_retention_seam_has_the_shape_we_replace():
    assert retention_seam_signature() == EXPECTED_RETENTION_SIGNATURE


@pytest.mark.parametrize("seam", [False, True], ids=["moto's check", "ours"])
def test_a_message_past_the_queues_retention_is_not_delivered_either_way(seam):
    """Our retention check answers as moto's: a message sent longer ago than the queue's
    retention period is dropped at receive, one within it is delivered."""
    uninstall = sqs_seam_install() if seam else (lambda: None)
    try:
        with mock_aws():
            sqs = boto3.client("sqs", region_name="us-east-1")
            url = sqs.create_queue(QueueName="q", Attributes={"MessageRetentionPeriod": "60"})[
                "QueueUrl"
            ]
            for body in ("kept", "expired"):
                sqs.send_message(QueueUrl=url, MessageBody=body)
            backend = sqs_backends["123456789012"]["us-east-1"]
            expired = next(m for m in backend.get_queue("q")._messages if m.body == "expired")
            expired.sent_timestamp -= 61_000  # sent 61 s earlier (milliseconds)
            received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    finally:
        uninstall()
    assert [m["Body"] for m in received] == ["kept"]


def test_the_sqs_receive_and_delete_seams_have_the_shape_we_wrap():
    assert receive_seam_signatures() == [
        EXPECTED_RECEIVE_SIGNATURE,
        "(self, timeout: int) -> None",
        "(self, receipt_handle: str) -> None",
    ]


def test_receives_and_deletes_at_once_deliver_each_message_once():
    """Five threads receive and delete at once, as our pollers do: without the seam moto
    delivered a message twice or failed mid-receive ("Set changed size during iteration")."""
    uninstall = sqs_seam_install()
    received, errors = [], []
    try:
        with mock_aws():
            sqs = boto3.client("sqs", region_name="us-east-1")
            url = sqs.create_queue(QueueName="q")["QueueUrl"]
            for first in range(0, 400, 10):
                sqs.send_message_batch(
                    QueueUrl=url,
                    Entries=[{"Id": str(n), "MessageBody": str(first + n)} for n in range(10)],
                )

            def drain():
                try:
                    while True:
                        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
                        messages = got.get("Messages", [])
                        if not messages:
                            return
                        received.extend(m["Body"] for m in messages)
                        sqs.delete_message_batch(
                            QueueUrl=url,
                            Entries=[
                                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                                for i, m in enumerate(messages)
                            ],
                        )
                except Exception as exc:
                    errors.append(exc)

            threads = [threading.Thread(target=drain) for _ in range(5)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
    finally:
        uninstall()
    assert errors == []
    assert sorted(received, key=int) == [str(n) for n in range(400)]  # each once


def test_the_stop_execution_seam_has_the_shape_we_wrap():
    assert stop_seam_signature() == EXPECTED_STOP_SIGNATURE


PARKED = {
    "StartAt": "Park",
    "States": {
        "Park": {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
            "Parameters": {
                "QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/parked",
                "MessageBody": {"token.$": "$$.Task.Token"},
            },
            "TimeoutSeconds": 600,
            "End": True,
        }
    },
}


def test_a_stopped_execution_parked_on_a_token_is_aborted_at_once(monkeypatch):
    """AWS answers StopExecution with the execution ABORTED and its token closed. moto
    alone leaves it RUNNING until the task's timeout (here 10 minutes) ends, then FAILED."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    uninstall = stop_seam_install()
    try:
        with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
            boto3.client("sqs", region_name="us-east-1").create_queue(QueueName="parked")
            sfn = boto3.client("stepfunctions", region_name="us-east-1")
            arn = create_machine(sfn, "parked", PARKED)
            run = sfn.start_execution(stateMachineArn=arn)["executionArn"]

            def parked() -> bool:
                events = sfn.get_execution_history(executionArn=run)["events"]
                return any(e["type"] == "TaskSubmitted" for e in events)

            wait_for(parked, 10, "never parked")
            sfn.stop_execution(executionArn=run, error="Operator", cause="stopped by hand")
            status = sfn.describe_execution(executionArn=run)["status"]

            def last_event() -> str:
                return str(sfn.get_execution_history(executionArn=run)["events"][-1]["type"])

            # The woken state ends the worker moments later; not after the 10-minute timeout.
            wait_for(lambda: last_event() == "ExecutionAborted", 10, "the history never ended")
            finished = sfn.describe_execution(executionArn=run)["status"]
    finally:
        uninstall()
    assert (status, finished) == ("ABORTED", "ABORTED")
