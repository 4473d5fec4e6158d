"""The EKS bearer token is issued on first use whatever the machine's uptime, reused while
fresh and re-issued before the 15-minute expiry."""

from __future__ import annotations

import pytest

from gpudev.cluster.eks import TOKEN_REFRESH_SECONDS, RefreshingToken


class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


def token_at(start: float) -> tuple[RefreshingToken, Clock, list[str]]:
    issued: list[str] = []
    clock = Clock(start)

    def issue() -> str:
        issued.append(f"token-{len(issued) + 1}")
        return issued[-1]

    return RefreshingToken(issue, clock), clock, issued


@pytest.mark.parametrize("uptime", [0.0, 0.001, 599.0, 601.0, 86_400.0])
def test_first_use_issues_a_token_whatever_the_uptime(uptime: float) -> None:
    token, _, issued = token_at(uptime)
    assert token.current() == "token-1"
    assert issued == ["token-1"]


def test_a_fresh_token_is_reused_until_ten_minutes_then_reissued() -> None:
    token, clock, issued = token_at(0.0)
    token.current()
    clock.now = 599.0
    assert token.current() == "token-1"
    clock.now = float(TOKEN_REFRESH_SECONDS)
    assert token.current() == "token-2"
    clock.now = TOKEN_REFRESH_SECONDS + 599.0
    assert token.current() == "token-2"
    clock.now = 2 * TOKEN_REFRESH_SECONDS + 1
    assert token.current() == "token-3"
    assert len(issued) == 3


def test_refresh_comes_before_the_fifteen_minute_expiry() -> None:
    assert TOKEN_REFRESH_SECONDS < 15 * 60
