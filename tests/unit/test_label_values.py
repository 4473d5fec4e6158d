"""Names derived from user input: label values from usernames are valid Kubernetes label
values, readable, and never shared by two users (the username itself goes into an
annotation); collaborators' Unix accounts can never be an existing account."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from gpudev.cluster.names import collaborator_account
from gpudev.cluster.vocabulary import label_value

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


ACCOUNT = re.compile(r"^gh-[a-z0-9-]{1,29}$")  # what the pod's control loop accepts


def test_collaborators_get_accounts_that_cannot_be_anyone_elses():

    for login in ("dev", "root", "1081", "0", "sshd", "ubuntu", "Octo-Cat", "a" * 39):
        account = collaborator_account(login)
        assert ACCOUNT.match(account), account
        assert len(account) <= 32
    assert collaborator_account("dev") == "gh-dev"
    assert collaborator_account("1081") == "gh-1081"  # never read as a UID
    assert collaborator_account("Octo-Cat") == collaborator_account("octo-cat") == "gh-octo-cat"
    assert collaborator_account("a" * 38 + "b") != collaborator_account("a" * 39)
