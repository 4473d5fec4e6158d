"""Label values derived from usernames are valid Kubernetes label values, readable, and never
shared by two different users; the username itself goes into an annotation."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from gpudev.lifecycle.objects import label_value

# Kubernetes' IsValidLabelValue: at most 63 characters matching this.
VALID = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def test_valid_usernames_are_kept_as_they_are():
    for username in ("alice", "bob.smith", "a_b-c", "x" * 63):
        assert label_value(username) == username


def test_an_sso_session_name_becomes_a_readable_valid_value():
    value = label_value("carol@example.com")
    assert VALID.match(value) and len(value) <= 63
    assert value.startswith("carol_example.com-")


def test_different_usernames_that_sanitise_alike_keep_different_values():
    assert label_value("carol@example.com") != label_value("carol_example.com")
    assert label_value("carol@example.com") != label_value("carol+example.com")
    assert label_value("x" * 64) != label_value("x" * 65)


@given(st.text(max_size=200))
def test_every_username_gives_a_valid_label_value(username: str):
    value = label_value(username)
    assert VALID.match(value), value
    assert len(value) <= 63
