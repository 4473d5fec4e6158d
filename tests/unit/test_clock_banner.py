"""`make run`'s banner states the one clock unit on screen (issue #16 item 6)."""

from __future__ import annotations

from localcloud.__main__ import clock_line


def test_a_compressed_clock_is_stated_with_its_unit():
    line = clock_line(60.0)
    assert line.startswith("COMPRESSED: a clock hour lasts 60 s (a clock minute 1 s)")
    assert "clock minutes/hours" in line and "wall-clock UTC" in line


def test_real_time_says_so():
    assert clock_line(3600.0) == "real time: an hour lasts an hour"
