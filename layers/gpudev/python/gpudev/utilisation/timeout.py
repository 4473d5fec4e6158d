"""`--idle-timeout` as users write it: `2h`, `90m`, `1.5h`, a number of hours, or `none`
(never reclaimed). Checked against the deployment's maximum with a sentence for every
refusal. The shape is exact (lower case, no spaces), as the API's schema states it; the CLI
sends what the user typed trimmed and in lower case."""

from __future__ import annotations

import math
import re

from gpudev.errors import InvalidRequest, shown

NEVER = "none"
# The shape the API's schema states (`IDLE_TIMEOUT_PATTERN`); the CLI sends it lower case.
IDLE_TIMEOUT_PATTERN = r"^(none|[0-9]+(\.[0-9]+)?[hm]?)$"
_SHAPE = re.compile(r"^(?P<amount>[0-9]+(?:\.[0-9]+)?)(?P<unit>[hm])?$")
FIELD = "idle_timeout"


def allowed(max_minutes: int) -> str:
    return f"a duration such as 2h or 90m, from 1m to {describe_minutes(max_minutes)}, or none"


def parse_idle_timeout(text: str | None, default_minutes: int, max_minutes: int) -> int | None:
    """Clock minutes of idleness before the warning, or None: never reclaimed. No value
    (None) is the deployment's default. A bare number is hours, as `--hours` is."""
    if text is None:
        return default_minutes
    if text == NEVER:
        return None
    match = _SHAPE.match(text)
    if match is None:
        raise InvalidRequest(
            f"idle timeout {shown(text)} is not a duration: write it as 2h, 90m or none",
            field=FIELD,
            allowed=allowed(max_minutes),
        )
    amount = float(match["amount"])
    minutes = amount if match["unit"] == "m" else amount * 60
    if minutes < 1:
        raise InvalidRequest(
            f"idle timeout {shown(text)} is too short: give at least 1m, or none to never be "
            "reclaimed",
            field=FIELD,
            allowed=allowed(max_minutes),
        )
    whole = math.ceil(minutes)
    if whole > max_minutes:
        raise InvalidRequest(
            f"idle timeout {shown(text)} is over this deployment's maximum of "
            f"{describe_minutes(max_minutes)}",
            field=FIELD,
            allowed=allowed(max_minutes),
            limit=max_minutes,
            hint="use a shorter timeout, or none if the reservation must never be reclaimed",
        )
    return whole


def describe_minutes(minutes: int) -> str:
    """`2 h`, `90 min`, `1 h 30 min`: how reasons and warnings say a duration."""
    hours, rest = divmod(minutes, 60)
    if not hours:
        return f"{rest} min"
    return f"{hours} h" if not rest else f"{hours} h {rest} min"
