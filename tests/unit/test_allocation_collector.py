"""A pass runs with Python's cyclic collector paused (`allocation/service.collector_paused`)
and leaves it as it found it, also when the pass fails."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from gpudev.allocation.service import collector_paused


@pytest.fixture
def collector() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_paused_during_the_pass_and_on_again_after(collector: None):
    gc.enable()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_on_again_after_a_failed_pass(collector: None):
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the pass failed")
    assert gc.isenabled()


def test_left_off_when_it_was_off(collector: None):
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
