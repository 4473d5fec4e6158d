"""boto3 clients answered by botocore's Stubber, for tests of code that calls AWS."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from botocore.stub import Stubber


@contextmanager
def stubbed_client(service: str) -> Iterator[tuple[Any, Stubber]]:
    """A `service` client and its stubber; on leaving, every queued response was asked for."""
    client = boto3.client(
        service, region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="y"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()
