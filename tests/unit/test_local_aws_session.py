"""The local cloud's admin clients come from one boto3 session (localcloud/aws.py): a new
session per client read botocore's endpoint and service models from disk again."""

import threading
from collections.abc import Iterator

import pytest

from localcloud.aws import LocalAws

ELSEWHERE = "http://127.0.0.1:9"  # a service served elsewhere (as SQS is in the local cloud)


@pytest.fixture
def aws() -> Iterator[LocalAws]:
    local = LocalAws("us-east-2").start()
    try:
        yield local
    finally:
        local.stop()


def test_every_admin_client_comes_from_one_session(aws: LocalAws):
    aws.service_endpoints["sqs"] = ELSEWHERE

    assert aws.admin_session() is aws.admin_session()
    sqs, ec2 = aws.client("sqs"), aws.client("ec2")
    assert sqs.meta.region_name == ec2.meta.region_name == "us-east-2"
    assert sqs.meta.endpoint_url == ELSEWHERE
    assert ec2.describe_vpcs()["Vpcs"]  # moto's default VPC: the client works


def test_clients_made_from_many_threads_at_once_all_work(aws: LocalAws):
    made: list[object] = []
    errors: list[BaseException] = []

    def make(service: str) -> None:
        try:
            made.append(aws.client(service))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=make, args=(("sqs", "logs")[i % 2],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == [] and len(made) == 8
