"""SQS on an endpoint and in a process of its own (localcloud/sqs_process.py): every client,
ours and the functions', finds it through botocore's `AWS_ENDPOINT_URL_SQS`; the cloud's own
moto holds no queue; the process is never left behind, and a port it cannot have is a clear
error with nothing left running."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import boto3
import pytest

from localcloud.child_process import OUTPUT_VARIABLE
from localcloud.deadline import Deadline
from localcloud.sqs_process import SqsProcess, SqsProcessError
from localcloud.stack import REGION, LocalCloud
from tests.support.child_processes import alive, assert_child_leaves_when_its_parent_is_killed
from tests.support.local_cloud_process import LocalCloudProcess, free_ports


def _moto_client(service: str, endpoint_url: str) -> object:
    return boto3.client(
        service,  # type: ignore[call-overload]
        endpoint_url=endpoint_url,
        region_name=REGION,
        aws_access_key_id="AKIALOCALADMIN000000",
        aws_secret_access_key="local-admin-secret",
    )


def test_the_queues_live_in_the_sqs_process_and_every_client_finds_them_there(
    local_cloud: LocalCloud,
):
    assert local_cloud.aws is not None and local_cloud.sqs_process is not None
    sqs_endpoint = local_cloud.describe()["sqs_endpoint_url"]
    assert sqs_endpoint == local_cloud.sqs_process.endpoint_url != local_cloud.aws.endpoint_url
    # What the functions (in this process or their own) and any boto3 client here resolve.
    assert os.environ["AWS_ENDPOINT_URL_SQS"] == sqs_endpoint
    # A profile's `ignore_configured_endpoint_urls` cannot send them to AWS itself.
    assert os.environ["AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"] == "false"
    assert boto3.Session(region_name=REGION).client("sqs").meta.endpoint_url == sqs_endpoint

    jobs_url = local_cloud.resources.queue_urls["Jobs"]
    served = _moto_client("sqs", sqs_endpoint).list_queues()["QueueUrls"]  # type: ignore[attr-defined]
    assert jobs_url in served
    # The cloud's own moto has no queue: nothing of SQS runs in its process.
    in_cloud = _moto_client("sqs", local_cloud.aws.endpoint_url).list_queues()  # type: ignore[attr-defined]
    assert in_cloud.get("QueueUrls", []) == []
    command = Path(f"/proc/{local_cloud.sqs_process.pid}/cmdline").read_bytes().split(b"\0")
    assert b"localcloud.sqs_process" in command


def test_a_stopped_sqs_process_is_reaped_and_its_endpoint_refuses():
    sqs = SqsProcess(REGION).wait_until_serving()
    client = _moto_client("sqs", sqs.endpoint_url)
    url = client.create_queue(QueueName="probe")["QueueUrl"]  # type: ignore[attr-defined]
    client.send_message(QueueUrl=url, MessageBody="hello")  # type: ignore[attr-defined]
    [message] = client.receive_message(QueueUrl=url)["Messages"]  # type: ignore[attr-defined]
    assert message["Body"] == "hello"

    sqs.stop(Deadline.after(5.0))
    assert sqs.process.returncode is not None and not alive(sqs.pid)
    host, port = sqs.endpoint_url.removeprefix("http://").split(":")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=2).close()


def test_a_port_the_sqs_process_cannot_have_is_a_clear_error_and_it_is_reaped():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        sqs = SqsProcess(REGION, port=busy.getsockname()[1])
        with pytest.raises(SqsProcessError, match="exited with 1 before serving"):
            sqs.wait_until_serving()
    assert sqs.process.returncode == 1 and not alive(sqs.pid)


def test_a_parent_gone_before_the_sqs_process_serves_gets_no_traceback_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # As when `make run` fails to start PostgreSQL while the SQS process still imports moto.
    output = tmp_path / "sqs-process.log"
    monkeypatch.setenv(OUTPUT_VARIABLE, str(output))
    sqs = SqsProcess(REGION)
    sqs.end(timeout=60.0)  # our end closed at once; the child finishes its start, then leaves
    assert sqs.process.returncode == 0, output.read_text()
    assert "Traceback" not in output.read_text()


PARENT = f"""
import sys
from localcloud.sqs_process import SqsProcess
sqs = SqsProcess({REGION!r}).wait_until_serving()
print(sqs.pid, flush=True)
sys.stdin.read()  # until killed
"""


def test_the_sqs_process_leaves_when_the_cloud_process_is_killed():
    assert_child_leaves_when_its_parent_is_killed(PARENT)


def test_a_dead_sqs_process_stops_the_local_cloud_with_a_clear_error_leaving_nothing(
    state_dir: Path,
):
    """Without SQS no job is queued or delivered: `python -m localcloud` says so once and
    stops (exit 1), PostgreSQL and every child of it gone; the pollers' failures do not
    flood its output meanwhile."""
    cloud = LocalCloudProcess(state_dir, free_ports())
    try:
        cloud.wait_until_up()
        postgres_pid, sqs_pid = cloud.postgres_pid, cloud.sqs_process_pid()
        os.kill(sqs_pid, signal.SIGKILL)
        out, _ = cloud.process.communicate(timeout=60)
    finally:
        cloud.kill()
    said = [line for line in out.splitlines() if "SQS process exited unexpectedly" in line]
    assert cloud.process.returncode == 1, out[-3000:]
    assert any(line.startswith("error: the SQS process exited") for line in said), out[-3000:]
    assert "(code -9)" in said[0]
    assert out.count("polling Jobs failed") <= 1, out[-3000:]  # logged once, if at all
    assert not alive(postgres_pid) and not alive(sqs_pid)
