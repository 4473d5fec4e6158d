"""The bucket's figures and the refusal's words (pure)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpudev.errors import RateLimited
from gpudev.settings import RateLimitSettings


@dataclass(frozen=True)
class RequestRate:
    per_minute: int  # sustained requests a minute
    burst: int  # requests at once from a full bucket

    @classmethod
    def of(cls, settings: RateLimitSettings) -> RequestRate:
        return cls(settings.api_requests_per_minute, settings.api_request_burst)

    @property
    def per_second(self) -> float:
        return self.per_minute / 60


def refusal(rate: RequestRate, wait_seconds: float) -> RateLimited:
    """The 429 for a caller whose bucket is empty: the limit, and when to come back (whole
    seconds, at least 1: `Retry-After` takes no fractions)."""
    retry_after = max(1, math.ceil(wait_seconds))
    return RateLimited(
        f"too many requests: the limit is {rate.per_minute} a minute per caller, "
        f"{rate.burst} at once; retry in {retry_after} s",
        retry_after_seconds=retry_after,
        limit=rate.per_minute,
        hint="wait for Retry-After; the gpu-dev CLI waits and retries by itself",
    )
