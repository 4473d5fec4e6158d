"""CloudWatch Logs throttling us (or briefly down) is the API's "unavailable, try again": a
503 with Retry-After, never a 500. The reader is given a real client stubbed at its boundary
(botocore's Stubber: moto never throttles)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from gpudev.errors import Unavailable
from gpudev.logs.cloudwatch import RETRY_AFTER_SECONDS, TRY_AGAIN_CODES, PodLogReader

ROOT = Path(__file__).resolve().parents[2]
GROUP = "/gpu-dev/pods"
STREAM = "0000/gpu-dev-00000000-0"


@pytest.fixture
def stubbed() -> Iterator[tuple[PodLogReader, Stubber]]:
    client = boto3.client(
        "logs", region_name="us-east-2", aws_access_key_id="a", aws_secret_access_key="b"
    )
    with Stubber(client) as stubber:
        yield PodLogReader(client, GROUP), stubber


@pytest.mark.parametrize("code", sorted(TRY_AGAIN_CODES))
def test_a_throttled_page_read_is_unavailable_with_a_retry_after(stubbed, code):
    reader, stubber = stubbed
    stubber.add_client_error("filter_log_events", service_error_code=code, http_status_code=400)
    with pytest.raises(Unavailable) as refused:
        reader.page([STREAM], None, 100, None)
    assert refused.value.retry_after_seconds == RETRY_AFTER_SECONDS
    assert "try again" in refused.value.message


@pytest.mark.parametrize("code", sorted(TRY_AGAIN_CODES))
def test_a_throttled_stream_listing_is_unavailable_with_a_retry_after(stubbed, code):
    reader, stubber = stubbed
    stubber.add_client_error("describe_log_streams", service_error_code=code)
    with pytest.raises(Unavailable):
        reader.existing_streams("0000/", {STREAM})


def test_another_cloudwatch_error_is_not_taken_for_throttling(stubbed):
    reader, stubber = stubbed
    stubber.add_client_error("filter_log_events", service_error_code="InvalidParameterException")
    with pytest.raises(ClientError) as raised:
        reader.page([STREAM], None, 100, None)
    assert not isinstance(raised.value, Unavailable)


def test_an_unavailable_with_a_retry_after_is_a_503_that_says_when(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "functions" / "api"))  # Lambda's task root
    from routes.errors import domain_error

    answer: Any = domain_error(Unavailable("busy; try again", retry_after_seconds=2))
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "2"
    plain: Any = domain_error(Unavailable("the jobs queue did not accept the request"))
    assert plain.status_code == 503 and "Retry-After" not in plain.headers
