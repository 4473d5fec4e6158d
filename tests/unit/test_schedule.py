"""The active reservation's clock (gpudev/lifecycle/schedule.py): expiry, the 30/15/5-minute
warnings, extensions, and how long to park until the next checkpoint."""

from __future__ import annotations

import pytest

from gpudev.lifecycle.schedule import Active, Schedule, warning_text

HOUR = Schedule(seconds_per_hour=3600)  # AWS: an hour lasts an hour
LAUNCHED = 1_000_000.0
ONE_HOUR_LATER = LAUNCHED + 3600


def _active(
    hours: float = 1,
    *,
    recorded: float | None = ONE_HOUR_LATER,
    sent: tuple[int, ...] = (),
    text: str | None = None,
) -> Active:
    return Active("5f0c1a2b", LAUNCHED, hours, recorded, sent, text)


def _minutes_before_expiry(minutes: float, expiry: float = ONE_HOUR_LATER) -> float:
    return expiry - minutes * 60


def test_the_expiry_is_the_launch_plus_the_duration_in_clock_hours():
    assert HOUR.expires_at(LAUNCHED, 1.5) == LAUNCHED + 5400
    assert Schedule(seconds_per_hour=60).expires_at(LAUNCHED, 1.5) == LAUNCHED + 90


def test_well_before_any_warning_nothing_is_sent_and_it_parks_until_the_first():
    due = HOUR.check(_active(), now=LAUNCHED + 60)
    assert not due.expired
    assert due.warnings_sent == () and due.warning_level is None and due.warning_text is None
    assert due.park_seconds == 3600 - 60 - 30 * 60  # until 30 minutes before the expiry


def test_exactly_at_a_warning_boundary_that_warning_is_due():
    due = HOUR.check(_active(), now=_minutes_before_expiry(30))
    assert due.warnings_sent == (30,) and due.warning_level == 30
    assert due.warning_text == (
        "INFO: reservation 5f0c1a2b expires in 30 minutes "
        "(gpu-dev extend 5f0c1a2b -h 1 for more time)."
    )
    assert due.park_seconds == 15 * 60  # until the 15-minute warning


def test_a_moment_before_the_boundary_the_warning_is_not_yet_due():
    due = HOUR.check(_active(), now=_minutes_before_expiry(30) - 0.25)
    assert due.warnings_sent == ()
    assert due.park_seconds == 1  # never zero: the state machine waits at least a second


def test_a_warning_already_sent_is_not_sent_again_and_its_text_stays_on_show():
    shown = "INFO: reservation 5f0c1a2b expires in 30 minutes"
    due = HOUR.check(_active(sent=(30,), text=shown), now=_minutes_before_expiry(20))
    assert due.warnings_sent == (30,) and due.warning_level == 30
    assert due.warning_text == shown
    assert due.park_seconds == 5 * 60  # until the 15-minute warning


def test_a_late_checkpoint_sends_every_warning_it_missed_and_shows_the_nearest():
    due = HOUR.check(_active(), now=_minutes_before_expiry(12))
    assert due.warnings_sent == (30, 15) and due.warning_level == 15
    assert due.warning_text == (
        "NOTICE: reservation 5f0c1a2b expires in 12 minutes. Please save your work."
    )
    assert due.park_seconds == 7 * 60  # until the 5-minute warning


def test_after_the_last_warning_it_parks_until_the_expiry():
    due = HOUR.check(_active(sent=(30, 15)), now=_minutes_before_expiry(4))
    assert due.warnings_sent == (30, 15, 5) and due.warning_level == 5
    assert due.warning_text == (
        "WARNING: reservation 5f0c1a2b expires in 4 minutes. Save your work!"
    )
    assert due.park_seconds == 4 * 60


def test_in_the_last_minute_the_warning_is_urgent():
    due = HOUR.check(_active(sent=(30, 15)), now=_minutes_before_expiry(0.5))
    assert due.warnings_sent == (30, 15, 5)
    assert due.warning_text == (
        "URGENT: reservation 5f0c1a2b expires in less than a minute. Save your work now!"
    )
    assert due.park_seconds == 30


@pytest.mark.parametrize("after", [0.0, 0.001, 3600.0])
def test_expiry_due_now_or_past_expires(after):
    due = HOUR.check(_active(sent=(30, 15, 5)), now=ONE_HOUR_LATER + after)
    assert due.expired and due.expires_at == ONE_HOUR_LATER


def test_an_extension_past_all_warnings_clears_them_and_parks_until_the_new_first():
    # 4 minutes before the old expiry, every warning sent; then extended by an hour.
    before = _active(hours=2, sent=(30, 15, 5), text="WARNING: ... 4 minutes")
    due = HOUR.check(before, now=_minutes_before_expiry(4))
    assert not due.expired and due.expires_at == ONE_HOUR_LATER + 3600
    assert due.warnings_sent == () and due.warning_level is None
    assert due.warning_text is None  # the old warning is no longer true
    assert due.park_seconds == (4 + 30) * 60  # until 30 minutes before the new expiry


def test_an_extension_that_still_ends_within_a_warning_sends_it_afresh():
    before = _active(hours=1.25, sent=(30, 15, 5), text="WARNING: ... 2 minutes")
    due = HOUR.check(before, now=_minutes_before_expiry(2))  # 17 minutes left now
    assert due.warnings_sent == (30,) and due.warning_level == 30
    assert due.warning_text is not None and "17 minutes" in due.warning_text


def test_a_recorded_expiry_off_by_a_rounding_error_is_not_an_extension():
    before = _active(recorded=ONE_HOUR_LATER - 0.4, sent=(30,), text="shown")
    due = HOUR.check(before, now=_minutes_before_expiry(20))
    assert due.warnings_sent == (30,) and due.warning_text == "shown"


def test_the_first_checkpoint_has_no_recorded_expiry_and_is_no_extension():
    due = HOUR.check(_active(recorded=None), now=_minutes_before_expiry(10))
    assert due.warnings_sent == (30, 15)


def test_a_compressed_clock_scales_every_warning_and_wait():
    fast = Schedule(seconds_per_hour=36)  # an hour in 36 s: a clock minute is 0.6 s
    expiry = LAUNCHED + 36
    assert fast.minutes(30) == 18
    early = fast.check(_active(recorded=expiry), now=LAUNCHED)
    assert early.warnings_sent == () and early.park_seconds == 18  # until 30 clock minutes
    at_15 = fast.check(_active(recorded=expiry, sent=(30,)), now=expiry - fast.minutes(15))
    assert at_15.warnings_sent == (30, 15)
    assert at_15.park_seconds == 6  # ceil(10 clock minutes = 6 s)
    assert fast.check(_active(recorded=expiry), now=expiry).expired


def test_the_warnings_come_from_the_settings():
    quiet = Schedule(seconds_per_hour=3600, warning_minutes=(10,))
    due = quiet.check(_active(), now=_minutes_before_expiry(20))
    assert due.warnings_sent == () and due.park_seconds == 10 * 60


@pytest.mark.parametrize(
    ("minutes_left", "start"),
    [(45, "INFO"), (15.5, "INFO"), (15, "NOTICE"), (5.5, "NOTICE"), (5, "WARNING"), (1, "WARNING")],
)
def test_the_warning_text_sharpens_as_the_expiry_nears(minutes_left, start):
    assert warning_text("abcd1234", minutes_left).startswith(f"{start}: reservation abcd1234")
