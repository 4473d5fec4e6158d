"""GitHub key fetches over real HTTP (a local server plays github.com, the outer boundary):
"the user has no keys" (200 with none, 404) is an answer, "GitHub did not answer" (5xx,
429, refused, timed out) is `GithubUnavailable`, a Transient the state machine retries; a
refresh follows every answer (a key deleted on GitHub goes, all of them when it answers
none) and keeps the last good keys only when GitHub does not answer."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gpudev.cluster import objects
from gpudev.lifecycle.keys import GithubKeys, GithubUnavailable
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.lifecycle.taxonomy import Transient, as_step_functions_error
from tests.unit.test_manifest_drift import _catalogue, _reservation

T4 = next(t for t in _catalogue() if t.gpu_type == "t4")
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKkey"
# user → (status, body); the handler answers what the test set
ANSWERS: dict[str, tuple[int, str]] = {}


class FakeGithub(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        user = self.path.strip("/").removesuffix(".keys")
        status, body = ANSWERS.get(user, (404, "Not Found"))
        payload = body.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def github() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeGithub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def answers() -> Iterator[dict[str, tuple[int, str]]]:
    ANSWERS.clear()
    yield ANSWERS
    ANSWERS.clear()


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens once closed


def test_keys_and_no_keys_are_answers(github, answers):
    answers["alice"] = (200, f"{KEY}\nnot-a-key\n")
    answers["empty"] = (200, "")
    keys = GithubKeys(base_url=github)
    assert keys.authorized_keys(["alice"]) == f"{KEY} alice@github\n"
    assert keys.keys("empty") == []
    assert keys.keys("nobody") == [], "404: no such user, so no keys (retrying will not help)"


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_github_not_answering_is_transient(github, answers, status):
    answers["alice"] = (status, "busy")
    with pytest.raises(GithubUnavailable, match=f"HTTP {status}") as raised:
        GithubKeys(base_url=github).keys("alice")
    # the name the state machine's Retry matches (an exact name, not a subclass)
    mapped = as_step_functions_error(raised.value)
    assert type(mapped) is Transient and str(mapped).startswith("GithubUnavailable: ")


def test_an_unreachable_github_is_transient():
    with pytest.raises(GithubUnavailable, match="did not answer"):
        GithubKeys(base_url=closed_port(), timeout_seconds=2).keys("alice")


@pytest.mark.parametrize("content", ["", '{"alice": ["ssh-ed25519 AAAA'])
def test_a_keys_file_caught_mid_write_is_github_not_answering(tmp_path, content):
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(content)
    with pytest.raises(GithubUnavailable, match="did not answer") as raised:
        GithubKeys(keys_file=str(keys_file)).keys("alice")
    assert type(as_step_functions_error(raised.value)) is Transient


def test_a_keys_file_that_is_gone_is_github_not_answering(tmp_path):
    with pytest.raises(GithubUnavailable):
        GithubKeys(keys_file=str(tmp_path / "absent.json")).keys("alice")


def _lifecycle(keys: GithubKeys) -> Lifecycle:
    return Lifecycle(None, None, None, keys, None, "gpu-dev", "gpu-dev-profiling")  # type: ignore[arg-type]


def test_provision_raises_when_github_does_not_answer(github, answers):
    answers["alice"] = (503, "down")
    reservation = _reservation("alice", T4, 1, 1).model_copy(update={"github_user": "alice"})
    with pytest.raises(GithubUnavailable):
        _lifecycle(GithubKeys(base_url=github)).keys_secret(reservation)


def test_a_refresh_keeps_the_last_good_keys_when_github_does_not_answer(github, answers):
    reservation = _reservation("alice", T4, 1, 1).model_copy(
        update={"github_user": "alice", "secondary_users": ["bob", "carol"]}
    )
    lc = _lifecycle(GithubKeys(base_url=github))
    bob_entry = objects.added_user_entry("bob")
    installed = {objects.OWNER_KEYS_ENTRY: f"{KEY} alice@github\n", bob_entry: "ssh-rsa B bob\n"}
    answers.update(alice=(503, "down"), bob=(502, "down"), carol=(200, f"{KEY}\n"))
    data = lc.keys_secret(reservation, installed)["stringData"]
    assert data[objects.OWNER_KEYS_ENTRY] == installed[objects.OWNER_KEYS_ENTRY]
    assert data[bob_entry] == installed[bob_entry]
    assert data[objects.added_user_entry("carol")] == f"{KEY} carol@github\n"
    # a user added while GitHub is down has nothing installed: the refresh is tried again
    answers["carol"] = (503, "down")
    with pytest.raises(GithubUnavailable):
        lc.keys_secret(reservation, installed)
    # GitHub back with new keys: they replace the installed ones
    answers.update(alice=(200, "ssh-ed25519 NEW\n"), bob=(200, ""), carol=(200, f"{KEY}\n"))
    data = lc.keys_secret(reservation, installed)["stringData"]
    assert data[objects.OWNER_KEYS_ENTRY] == "ssh-ed25519 NEW alice@github\n"
    assert data[bob_entry] == "", "an empty answer removes the installed keys"


OLD_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQold"


def _refreshed(github: str, installed: str | None) -> str:
    return GithubKeys(base_url=github, timeout_seconds=2).refreshed(["bob"], installed)


def test_a_key_deleted_on_github_goes_at_the_next_refresh(github, answers):
    installed = f"{OLD_KEY} bob@github\n{KEY} bob@github\n"
    answers["bob"] = (200, f"{KEY}\n")
    assert _refreshed(github, installed) == f"{KEY} bob@github\n"


@pytest.mark.parametrize(
    "answer", [(200, ""), (200, "no keys here\n"), (404, "Not Found")], ids=["empty", "junk", "404"]
)
def test_an_answer_of_no_keys_removes_every_installed_key(github, answers, answer):
    """The user deleted all their keys (or their account): nothing opens the pod for them."""
    answers["bob"] = answer
    assert _refreshed(github, f"{KEY} bob@github\n") == ""


@pytest.mark.parametrize("status", [500, 502, 503, 504, 429])
def test_github_not_answering_keeps_the_installed_keys(github, answers, status):
    answers["bob"] = (status, "busy")
    assert _refreshed(github, f"{KEY} bob@github\n") == f"{KEY} bob@github\n"
    # an entry installed empty (the user had no keys) is kept too: no retry, no failure
    assert _refreshed(github, "") == ""


def test_github_unreachable_or_timing_out_keeps_the_installed_keys():
    keys = GithubKeys(base_url=closed_port(), timeout_seconds=2)
    assert keys.refreshed(["bob"], f"{KEY} bob@github\n") == f"{KEY} bob@github\n"


def test_a_timeout_keeps_the_installed_keys():
    """A server that accepts and never answers: the fetch times out, a transient failure."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        keys = GithubKeys(base_url=url, timeout_seconds=0.5)
        assert keys.refreshed(["bob"], f"{KEY} bob@github\n") == f"{KEY} bob@github\n"
        with pytest.raises(GithubUnavailable, match="did not answer"):
            keys.refreshed(["bob"], None)  # nothing installed yet: tried again later


def test_a_removed_user_has_no_entry_in_the_refreshed_secret(github, answers):
    reservation = _reservation("alice", T4, 1, 1).model_copy(
        update={"github_user": "alice", "secondary_users": ["carol"]}
    )
    answers.update(alice=(200, f"{KEY}\n"), carol=(200, f"{KEY}\n"))
    installed = {
        objects.OWNER_KEYS_ENTRY: f"{KEY} alice@github\n",
        objects.added_user_entry("bob"): f"{KEY} bob@github\n",  # bob was removed
        objects.added_user_entry("carol"): f"{KEY} carol@github\n",
    }
    data = _lifecycle(GithubKeys(base_url=github)).keys_secret(reservation, installed)
    assert set(data["stringData"]) == {
        objects.OWNER_KEYS_ENTRY,
        "jupyter_token",
        objects.added_user_entry("carol"),
    }
