"""Idle reclaim's rules (gpudev/utilisation/idle.py), without I/O: the idle window, the
warning and its grace, the first minutes, `none`, the per-type policy, and activity."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from gpudev.utilisation.idle import IdleRules, Policy, Seen, parse_policy, plan_idle
from gpudev.utilisation_rows import IdleCandidate, IdleChange

LAUNCH = datetime(2026, 11, 27, 8, 0, tzinfo=UTC)
RULES = IdleRules(seconds_per_hour=3600, grace_minutes=30, first_minutes=30)


def candidate(**fields: object) -> IdleCandidate:
    base = IdleCandidate(
        reservation_id=uuid4(),
        gpu_type="h100",
        launched_at=LAUNCH,
        task_token="token",
        idle_timeout_minutes=120,
        idle_active_at=None,
        idle_warning=None,
        idle_warned_at=None,
        idle_ending=None,
        others_waiting=False,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def judge(c: IdleCandidate, seen: Seen, at: datetime, rules: IdleRules = RULES):
    return plan_idle([c], {c.reservation_id: seen}, rules, at)


def test_idle_for_less_than_its_timeout_is_left_alone():
    assert judge(candidate(), Seen.IDLE, LAUNCH + timedelta(minutes=119)) == []


def test_idle_for_its_timeout_is_warned_with_the_grace_and_the_end_time():
    at = LAUNCH + timedelta(minutes=120)
    (change,) = judge(candidate(), Seen.IDLE, at)
    assert change.warned_at == at and change.ending is None
    assert change.ends_at == at + timedelta(minutes=30)  # the bus's idle event says when
    assert change.warning is not None
    assert (
        "not been used for 2 h" in change.warning and "in 30 min (at 10:30 UTC)" in change.warning
    )


def test_the_idle_window_starts_at_the_last_activity():
    c = candidate(idle_active_at=LAUNCH + timedelta(minutes=60))
    assert judge(c, Seen.IDLE, LAUNCH + timedelta(minutes=179)) == []
    (change,) = judge(c, Seen.IDLE, LAUNCH + timedelta(minutes=180))
    assert change.warning


def test_still_idle_after_the_grace_ends_it_with_the_timeout_as_reason():
    warned = LAUNCH + timedelta(minutes=120)
    c = candidate(idle_warning="idle: ...", idle_warned_at=warned)
    assert judge(c, Seen.IDLE, warned + timedelta(minutes=29)) == []
    (change,) = judge(c, Seen.IDLE, warned + timedelta(minutes=30))
    assert change.ending == "idle for 2 h"


def test_an_ending_once_recorded_is_not_decided_again():
    c = candidate(idle_warned_at=LAUNCH, idle_ending="idle for 2 h")
    assert judge(c, Seen.IDLE, LAUNCH + timedelta(days=1)) == []
    assert judge(c, Seen.BUSY, LAUNCH + timedelta(days=1)) == []


def test_never_in_its_first_minutes_even_with_a_shorter_timeout():
    c = candidate(idle_timeout_minutes=10)
    assert judge(c, Seen.IDLE, LAUNCH + timedelta(minutes=29)) == []
    (change,) = judge(c, Seen.IDLE, LAUNCH + timedelta(minutes=30))
    assert change.warning is not None and "10 min" in change.warning


def test_none_is_never_reclaimed():
    c = candidate(idle_timeout_minutes=None)
    assert judge(c, Seen.IDLE, LAUNCH + timedelta(days=3)) == []


def test_a_timeout_set_to_none_after_a_warning_withdraws_it():
    c = candidate(idle_timeout_minutes=None, idle_warned_at=LAUNCH, idle_warning="idle")
    (change,) = judge(c, Seen.IDLE, LAUNCH + timedelta(hours=5))
    assert change == IdleChange(c.reservation_id, clear_warning=True)


@pytest.mark.parametrize("seen", [Seen.BUSY, Seen.UNSEEN])
def test_activity_or_no_look_restarts_the_clock_and_clears_a_warning(seen: Seen):
    at = LAUNCH + timedelta(hours=5)
    c = candidate(idle_warned_at=LAUNCH + timedelta(hours=4), idle_warning="idle")
    (change,) = judge(c, seen, at)
    assert change == IdleChange(c.reservation_id, active_at=at, clear_warning=True)


def test_a_reservation_the_run_did_not_see_counts_as_active():
    c = candidate()
    at = LAUNCH + timedelta(hours=5)
    assert plan_idle([c], {}, RULES, at) == [IdleChange(c.reservation_id, active_at=at)]


def test_when_waiting_warns_only_while_others_wait_for_the_type():
    rules = replace(RULES, policies=parse_policy("h100=when-waiting"))
    at = LAUNCH + timedelta(hours=3)
    assert judge(candidate(), Seen.IDLE, at, rules) == []
    (change,) = judge(candidate(others_waiting=True), Seen.IDLE, at, rules)
    assert change.warning


def test_when_nobody_waits_any_more_a_warning_is_withdrawn_not_acted_on():
    rules = replace(RULES, policies=parse_policy("h100=when-waiting"))
    c = candidate(idle_warned_at=LAUNCH + timedelta(hours=2), idle_warning="idle")
    (change,) = judge(c, Seen.IDLE, LAUNCH + timedelta(hours=3), rules)
    assert change.clear_warning and change.ending is None


def test_never_policy_and_the_wildcard_apply_by_type():
    policies = parse_policy("t4=never,*=when-waiting")
    rules = replace(RULES, policies=policies)
    assert rules.policy("T4") == Policy.NEVER
    assert rules.policy("h100") == Policy.WHEN_WAITING
    assert (
        judge(
            candidate(gpu_type="t4", others_waiting=True),
            Seen.IDLE,
            LAUNCH + timedelta(hours=9),
            rules,
        )
        == []
    )


def test_a_bad_policy_entry_is_named():
    with pytest.raises(ValueError, match="'h100=sometimes'"):
        parse_policy("h100=sometimes")


def test_a_compressed_clock_compresses_every_span():
    rules = replace(RULES, seconds_per_hour=60)  # an hour lasts a minute
    assert judge(candidate(), Seen.IDLE, LAUNCH + timedelta(seconds=119), rules) == []
    (change,) = judge(candidate(), Seen.IDLE, LAUNCH + timedelta(seconds=120), rules)
    assert change.warning
