"""An operator's force-cancel needs a reason: one of spaces is none (it would be recorded as
`cancelled by operator carol: `)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpudev.usage.schemas import ForceCancelRequest


@pytest.mark.parametrize("reason", ["", "   ", "\t\n", "x" * 401])
def test_a_blank_or_overlong_reason_is_refused(reason: str):
    with pytest.raises(ValidationError):
        ForceCancelRequest(reason=reason)


def test_a_reason_is_recorded_without_its_surrounding_spaces():
    assert ForceCancelRequest(reason="  node maintenance \n").reason == "node maintenance"
