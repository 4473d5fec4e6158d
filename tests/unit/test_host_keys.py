"""A reservation's sshd host key (gpudev/cluster/host_keys.py): Ed25519 made in plain
Python, checked against RFC 8032's vectors, OpenSSH's own ssh-keygen and `cryptography`;
carried over as it is when the keys Secret is refreshed (an added user), so a pod's key
never changes while the reservation lives."""

from __future__ import annotations

import base64
import shutil
import subprocess
from pathlib import Path

import pytest

from gpudev.cluster import objects
from gpudev.cluster.host_keys import (
    PRIVATE_ENTRY,
    PUBLIC_ENTRY,
    carried_host_key,
    host_key_of,
    new_host_key,
)
from gpudev.lifecycle.keys import GithubKeys
from tests.unit import test_github_keys
from tests.unit.test_github_keys import KEY, _lifecycle
from tests.unit.test_manifest_drift import _catalogue, _reservation

# The local server that plays github.com, and the answers it gives (test_github_keys.py).
github = test_github_keys.github
answers = test_github_keys.answers
# RFC 8032 §7.1, tests 1 to 3: secret key (the seed), public key.
RFC_8032 = [
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
    ),
    (
        "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
        "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025",
    ),
]


def _raw_public(line: str) -> bytes:
    """The 32 key bytes of an OpenSSH public key line."""
    kind, blob = line.split()[:2]
    assert kind == "ssh-ed25519"
    decoded = base64.b64decode(blob)
    assert decoded[:15] == b"\0\0\0\x0bssh-ed25519" and decoded[15:19] == b"\0\0\0\x20"
    return decoded[19:]


@pytest.mark.parametrize(("seed", "public"), RFC_8032)
def test_the_public_key_is_rfc_8032s(seed: str, public: str):
    assert _raw_public(host_key_of(bytes.fromhex(seed)).public).hex() == public


def test_a_seed_of_another_length_is_refused():
    with pytest.raises(ValueError, match="32 bytes"):
        host_key_of(b"short")


def test_every_new_key_is_a_new_one():
    assert new_host_key() != new_host_key()


def test_cryptography_reads_the_private_key_file_and_derives_the_same_public_key():
    serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
    for _ in range(10):
        key = new_host_key()
        loaded = serialization.load_ssh_private_key(key.private.encode(), None)
        derived = loaded.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
        assert derived.decode() == key.public


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen")
def test_openssh_reads_the_private_key_file(tmp_path: Path):
    key = new_host_key()
    path = tmp_path / PRIVATE_ENTRY
    path.write_text(key.private)
    path.chmod(0o600)
    shown = subprocess.run(
        ["ssh-keygen", "-y", "-f", str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert shown.split()[:2] == key.public.split()
    fingerprint = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(path)], capture_output=True, text=True, check=True
    ).stdout
    assert fingerprint.startswith("256 SHA256:") and "(ED25519)" in fingerprint


def test_the_keys_secret_carries_the_host_key_given_at_provision(github, answers):
    answers["alice"] = (200, f"{KEY}\n")
    reservation = _reservation("alice", _catalogue()[0], 1, 1).model_copy(
        update={"github_user": "alice"}
    )
    key = new_host_key()
    data = _lifecycle(GithubKeys(base_url=github)).keys_secret(reservation, host_key=key)
    assert data["stringData"][PRIVATE_ENTRY] == key.private
    assert data["stringData"][PUBLIC_ENTRY] == key.public + "\n"


def test_a_refresh_keeps_the_installed_host_key_as_it_is(github, answers):
    """An added user rewrites the Secret: the pod's host key must come through unchanged
    (the next container start installs what the Secret holds)."""
    reservation = _reservation("alice", _catalogue()[0], 1, 1).model_copy(
        update={"github_user": "alice", "secondary_users": ["bob"]}
    )
    answers.update(alice=(200, f"{KEY}\n"), bob=(200, f"{KEY}\n"))
    key = new_host_key()
    installed = {objects.OWNER_KEYS_ENTRY: f"{KEY} alice@github\n", **key.entries()}
    data = _lifecycle(GithubKeys(base_url=github)).keys_secret(reservation, installed)
    assert data["stringData"][PRIVATE_ENTRY] == key.private
    assert data["stringData"][PUBLIC_ENTRY] == installed[PUBLIC_ENTRY]
    assert "user.gh-bob" in data["stringData"]


def test_a_secret_from_before_host_keys_gets_none_at_a_refresh(github, answers):
    """A reservation provisioned before host keys were kept: its pod keeps generating its
    own (startup.sh), and the row has no public key for the CLI to pin."""
    reservation = _reservation("alice", _catalogue()[0], 1, 1).model_copy(
        update={"github_user": "alice"}
    )
    answers["alice"] = (200, f"{KEY}\n")
    installed = {objects.OWNER_KEYS_ENTRY: f"{KEY} alice@github\n"}
    data = _lifecycle(GithubKeys(base_url=github)).keys_secret(reservation, installed)
    assert PRIVATE_ENTRY not in data["stringData"] and PUBLIC_ENTRY not in data["stringData"]
    assert carried_host_key(installed) == {}
