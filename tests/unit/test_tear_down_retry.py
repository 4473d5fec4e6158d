"""Tear down rides out a 15-minute outage of EKS or the database: its retries, as Step
Functions computes them (IntervalSeconds × BackoffRate^n, capped by MaxDelaySeconds, then a
uniform draw in [0, delay] with FULL jitter), add up to well over 15 minutes."""

import json
import math
from pathlib import Path

ASL = Path(__file__).resolve().parents[2] / "statemachines" / "reservation.asl.json"
OUTAGE_SECONDS = 15 * 60


def _tear_down_retriers() -> list[dict]:
    """Every retrier of Tear down: an error uses the first one that names it, so each must
    ride out the outage on its own (the transient names first, then everything else)."""
    retriers = json.loads(ASL.read_text())["States"]["Tear down"]["Retry"]
    assert retriers[-1]["ErrorEquals"] == ["States.ALL"]
    return list(retriers)


def _delays(retrier: dict) -> list[float]:
    interval = retrier.get("IntervalSeconds", 1)
    rate = retrier.get("BackoffRate", 2.0)
    cap = retrier.get("MaxDelaySeconds", math.inf)
    return [min(interval * rate**n, cap) for n in range(retrier["MaxAttempts"])]


def test_tear_down_retries_cover_a_fifteen_minute_outage_even_with_full_jitter():
    for retrier in _tear_down_retriers():
        delays = _delays(retrier)
        assert retrier.get("JitterStrategy") == "FULL"  # many tear downs at once spread out
        # Each wait is uniform in [0, delay]: mean delay/2, variance delay²/12.
        mean = sum(d / 2 for d in delays)
        sigma = math.sqrt(sum(d * d / 12 for d in delays))
        assert mean - 4 * sigma >= OUTAGE_SECONDS, (retrier["ErrorEquals"], mean, sigma)


def test_no_single_tear_down_wait_is_longer_than_a_minute():
    """Once the cluster or the database is back, tear down follows within a minute."""
    assert all(max(_delays(r)) <= 60 for r in _tear_down_retriers())
