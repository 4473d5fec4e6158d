"""Ready means usable (issue #15): a reservation becomes active only once its pod is Ready
(the SSH readiness probe passed, not merely Running) with the owner's keys installed; no
GitHub user is refused at submit, a user without keys fails at provision with nothing left;
once active, the keys follow GitHub's answers at every checkpoint (a key deleted there goes,
all of them when it answers none)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.lifecycle.helpers import (
    assert_nothing_left,
    objects_of,
    reserve,
    secret_data,
    show,
    wait_for_status,
)
from tests.support.waiting import wait_for

NO_KEYS_SENTENCE = (
    "set a GitHub username with `gpu-dev config set github_user NAME`, or pass --github-user"
)


def _replace(path: Path, text: str) -> None:
    """Rewrite the local GitHub's keys file as one step: the functions read it at any moment,
    and a file caught between truncate and write is not JSON (which fails the task)."""
    staged = path.with_name(f".{path.name}.new")
    staged.write_text(text)
    os.replace(staged, path)


def _ready(pod):
    conditions = {c["type"]: c["status"] for c in pod["status"].get("conditions") or []}
    return conditions.get("Ready") == "True"


def test_active_only_once_the_pod_is_ready_not_merely_running(api, local_cloud):
    rid = reserve(api)["reservation_id"]
    running = wait_for(
        lambda: [
            p for p in objects_of(local_cloud, rid)["pods"] if p["status"].get("phase") == "Running"
        ],
        message="the pod runs",
    )
    assert not _ready(running[0]), "the probe has not passed yet"
    seen = []
    while not _ready(objects_of(local_cloud, rid)["pods"][0]):
        seen.append(show(api, rid)["status"])
        time.sleep(0.1)
    assert seen and set(seen) == {"preparing"}, seen
    active = wait_for_status(api, rid, "active")
    assert _ready(objects_of(local_cloud, rid)["pods"][0])
    assert active["ssh_command"]


def test_a_probe_that_never_passes_fails_with_the_readiness_timeouts_reason(api, local_cloud):
    local_cloud.cluster.probes.probes_fail = True
    rid = reserve(api)["reservation_id"]
    ended = wait_for_status(api, rid, "failed")
    assert "the pod was not ready in time" in ended["current_detailed_status"]
    assert "SSH is not answering yet" in ended["current_detailed_status"]
    assert_nothing_left(local_cloud, rid)


def test_no_github_user_is_refused_at_submit_and_nothing_is_written(api, local_cloud):
    before = api.call("GET", "/v1/reservations", profile="bob").body
    reply = api.call(
        "POST",
        "/v1/reservations",
        profile="bob",
        body={"gpu_type": "t4", "gpu_count": 1, "hours": 1},
    )
    assert reply.status == 422, reply.body
    assert NO_KEYS_SENTENCE in reply.body["message"]
    assert api.call("GET", "/v1/reservations", profile="bob").body == before


def test_a_github_user_without_keys_fails_at_provision_with_nothing_left(api, local_cloud):
    rid = reserve(api, github_user="nokeys")["reservation_id"]
    ended = wait_for_status(api, rid, "failed")
    assert "no SSH keys to install" in ended["current_detailed_status"]
    assert "'nokeys'" in ended["current_detailed_status"]
    # the provision task's own outcome, not an error's name: the user reads a clean reason
    assert ended["failure_reason"].startswith("no SSH keys to install: GitHub user 'nokeys'")
    assert ended["launched_at"] is None
    assert_nothing_left(local_cloud, rid)


def test_a_later_answer_of_no_keys_removes_the_installed_ones(api, local_cloud):
    """The owner deleted their keys on GitHub: the next refresh (here the one an added user
    brings) installs none. GitHub not answering keeps them: tests/unit/test_github_keys.py."""
    keys_file = Path(os.environ["LIFECYCLE_GITHUB_KEYS_FILE"])
    known = keys_file.read_text()
    rid = reserve(api, github_user="alice")["reservation_id"]
    wait_for_status(api, rid, "active")
    installed = secret_data(objects_of(local_cloud, rid)["secrets"][0])["authorized_keys"]
    assert "alice@github" in installed
    try:  # GitHub now answers no keys for alice
        _replace(keys_file, json.dumps({"octocat": json.loads(known)["octocat"]}))
        api.call("POST", f"/v1/reservations/{rid}/users", body={"github_username": "octocat"})

        def applied():
            keys = secret_data(objects_of(local_cloud, rid)["secrets"][0])
            return "octocat@github" in keys.get("user.gh-octocat", "") and keys

        keys = wait_for(applied, message="the added user's keys applied")
    finally:
        _replace(keys_file, known)
    assert keys["authorized_keys"] == "", "the keys deleted on GitHub no longer open the pod"


def test_a_key_deleted_on_github_goes_at_the_next_checkpoint_without_a_change(api, local_cloud):
    """No edit: the expiry warning's checkpoint refreshes the keys too."""
    keys_file = Path(os.environ["LIFECYCLE_GITHUB_KEYS_FILE"])
    known = keys_file.read_text()
    rid = reserve(api, github_user="alice", hours=0.6)["reservation_id"]
    wait_for_status(api, rid, "active")
    assert (
        "alice@github" in secret_data(objects_of(local_cloud, rid)["secrets"][0])["authorized_keys"]
    )
    try:
        _replace(keys_file, json.dumps({**json.loads(known), "alice": ["ssh-ed25519 AAAAnew"]}))
        keys = wait_for(
            lambda: (
                (k := secret_data(objects_of(local_cloud, rid)["secrets"][0]))["authorized_keys"]
                == "ssh-ed25519 AAAAnew alice@github\n"
                and k
            ),
            message="alice's keys as GitHub has them now",
            timeout=30,
        )
    finally:
        _replace(keys_file, known)
    # the checkpoint writes the Secret, then the row's warning, moments apart
    wait_for(
        lambda: show(api, rid)["warning_text"], message="refreshed by the warning's checkpoint"
    )
    assert keys["authorized_keys"] == "ssh-ed25519 AAAAnew alice@github\n"
