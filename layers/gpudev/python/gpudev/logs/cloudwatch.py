"""Reads a reservation's pod streams from the dev pods' log group (CloudWatch Logs, through
an injected client): DescribeLogStreams finds which of the wanted streams exist (a pod that
printed nothing has none), FilterLogEvents reads one page of them, interleaved by time.

FilterLogEvents is given stream names, never a prefix: the names come from the reservation,
so a page holds only its pods' lines whatever the prefix would match.

CloudWatch throttling (5 FilterLogEvents a second per account and region, shared by every
reader) or a CloudWatch outage is Unavailable with a Retry-After: the API answers 503, and
`gpu-dev logs --follow` waits and asks again, instead of a 500 that reads as a bug."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from gpudev.errors import Unavailable

log = logging.getLogger(__name__)

# The error codes CloudWatch Logs answers when it throttles or is briefly down.
TRY_AGAIN_CODES = frozenset(
    {"ThrottlingException", "LimitExceededException", "ServiceUnavailableException"}
)
RETRY_AFTER_SECONDS = 2


@dataclass(frozen=True)
class RawPage:
    events: list[dict[str, Any]]  # FilterLogEvents' events: logStreamName, timestamp, ...
    next_token: str | None


class PodLogReader:
    def __init__(self, client: Any, log_group: str) -> None:
        self._client = client
        self._group = log_group

    def existing_streams(self, prefix: str, wanted: set[str]) -> list[str]:
        """Those of `wanted` (all starting with `prefix`) that exist in the group."""
        found: list[str] = []
        kwargs: dict[str, Any] = {"logGroupName": self._group, "logStreamNamePrefix": prefix}
        try:
            with _try_again_later():
                for page in self._client.get_paginator("describe_log_streams").paginate(**kwargs):
                    found += [s["logStreamName"] for s in page.get("logStreams", [])]
        except self._client.exceptions.ResourceNotFoundException:
            log.warning("log group %s does not exist: no pod output can be read", self._group)
            return []
        return sorted(name for name in found if name in wanted)

    def page(
        self, streams: list[str], start_ms: int | None, limit: int, token: str | None
    ) -> RawPage:
        kwargs: dict[str, Any] = {
            "logGroupName": self._group,
            "logStreamNames": streams,
            "limit": limit,
            # Deprecated and always on in CloudWatch (lines by time across streams); moto
            # groups them by stream without it.
            "interleaved": True,
        }
        if start_ms is not None:
            kwargs["startTime"] = start_ms
        if token is not None:
            kwargs["nextToken"] = token
        try:
            with _try_again_later():
                answer = self._client.filter_log_events(**kwargs)
        except self._client.exceptions.ResourceNotFoundException:
            return RawPage([], None)  # the group went between the two calls
        return RawPage(answer.get("events", []), answer.get("nextToken"))


@contextmanager
def _try_again_later() -> Iterator[None]:
    """CloudWatch's throttling and outages as Unavailable (503 with Retry-After)."""
    try:
        yield
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code")
        if code not in TRY_AGAIN_CODES:
            raise
        log.warning("CloudWatch Logs refused a read: %s", code)
        raise Unavailable(
            "CloudWatch Logs is busy and did not answer; try again in a few seconds",
            retry_after_seconds=RETRY_AFTER_SECONDS,
        ) from None
