"""`--idle-timeout` parsed: durations, none, the default, and a sentence for every refusal."""

from __future__ import annotations

import pytest

from gpudev.errors import InvalidRequest
from gpudev.utilisation.timeout import describe_minutes, parse_idle_timeout


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("2h", 120),
        ("45m", 45),
        ("90m", 90),
        ("1.5h", 90),
        ("3", 180),
        ("none", None),
        (None, 240),
    ],
)
def test_durations_none_and_the_default(text: str | None, minutes: int | None):
    assert parse_idle_timeout(text, default_minutes=240, max_minutes=720) == minutes


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0", "too short"),
        ("0m", "too short"),
        ("0.2m", "too short"),
        ("13h", "over this deployment's maximum of 12 h"),
        ("soon", "is not a duration"),
        ("-2h", "is not a duration"),
        ("2 days", "is not a duration"),
        ("", "is not a duration"),
        ("2H", "is not a duration"),  # the shape is exact: the CLI sends lower case
        (" 2h", "is not a duration"),
        ("NONE", "is not a duration"),
        ("45min", "is not a duration"),
    ],
)
def test_bad_timeouts_are_refused_with_a_sentence(text: str, message: str):
    with pytest.raises(InvalidRequest, match=message) as refused:
        parse_idle_timeout(text, default_minutes=120, max_minutes=720)
    assert refused.value.field == "idle_timeout"


def test_durations_are_said_in_hours_and_minutes():
    assert [describe_minutes(m) for m in (45, 60, 90, 120)] == [
        "45 min",
        "1 h",
        "1 h 30 min",
        "2 h",
    ]
