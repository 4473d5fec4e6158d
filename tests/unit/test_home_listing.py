"""The disk's content listing (cluster/home_listing.py): only pod 0 of a reservation with a
disk writes it as it stops and is kept by the finalizer until it is read; the listing is
read from a stopped container's termination message, and a pod whose node never stops it
is let go after a bounded wait."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gpudev.cluster import home_listing, objects
from gpudev.cluster.names import Placement
from gpudev.cluster.vocabulary import STARTUP_FAILED
from tests.unit.test_manifest_drift import _catalogue, _reservation

T4 = next(t for t in _catalogue() if t.gpu_type == "t4")
DELETED_AT = datetime(2026, 11, 24, 1, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("rank", "claim", "hooked"), [(0, "home", True), (1, "home", False), (0, None, False)]
)
def test_only_pod_0_with_a_disk_lists_it_as_it_stops_and_is_held_until_read(
    rank: int, claim: str | None, hooked: bool
):
    reservation = _reservation("alice", T4, T4.max_gpus * 2, 2)
    pod = objects.pod(
        reservation, T4, Placement(rank, "i-0", "10.0.0.1", T4.max_gpus), "img", claim
    )
    (container,) = pod["spec"]["containers"]
    assert ("lifecycle" in container) is hooked
    assert home_listing.holds_listing(pod) is hooked
    if hooked:
        command = container["lifecycle"]["preStop"]["exec"]["command"]
        assert "/home/dev" in command[-1] and "/dev/termination-log" in command[-1]
        assert f"head -c {home_listing.LISTING_BYTES}" in command[-1]
        marker = len(home_listing.LISTING_MARKER.encode())
        assert marker + home_listing.LISTING_BYTES < 4096, "under the kubelet's limit"
        assert container["terminationMessagePolicy"] == "File"


def _pod(state: dict[str, Any], deleting: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"finalizers": [home_listing.LISTING_FINALIZER, "other"]}
    if deleting:
        meta["deletionTimestamp"] = DELETED_AT.isoformat().replace("+00:00", "Z")
    return {
        "metadata": meta,
        "status": {"containerStatuses": [{"name": "gpu-dev", "state": state}]},
    }


def test_a_stopped_pods_listing_is_its_termination_message_after_the_marker():
    listed = home_listing.LISTING_MARKER + "f 12 train.py\n"
    stopped = _pod({"terminated": {"exitCode": 137, "message": listed}})
    assert home_listing.stopped(stopped)
    assert home_listing.listing_of(stopped) == "f 12 train.py\n"
    empty = _pod({"terminated": {"exitCode": 137, "message": home_listing.LISTING_MARKER}})
    assert home_listing.listing_of(empty) == "", "an empty home is a listing"
    assert home_listing.listing_of(_pod({"terminated": {"exitCode": 137}})) is None
    assert home_listing.listing_of(_pod({"waiting": {"reason": "ImagePullBackOff"}})) is None
    assert home_listing.without_finalizer(stopped)["metadata"]["finalizers"] == ["other"]


@pytest.mark.parametrize(
    "message",
    [
        # deleted between two crashes at startup: the startup script's reason
        f"{STARTUP_FAILED}no sshd\n",
        # deleted while waiting (CrashLoopBackOff): the kubelet's TerminatePod
        "The container could not be located when the pod was terminated",
        "f 12 train.py\n",  # a message without the marker, whatever it looks like
        "x" + home_listing.LISTING_MARKER,
    ],
)
def test_a_termination_message_without_the_marker_is_no_listing(message: str):
    terminated = {"exitCode": 137, "message": message}
    if message.startswith("The container"):
        terminated["reason"] = "ContainerStatusUnknown"
    pod = _pod({"terminated": terminated})
    assert home_listing.stopped(pod) and home_listing.listing_of(pod) is None


def test_the_hook_writes_the_marker_then_the_sorted_listing(tmp_path: Path):
    """The hook's shell command itself, run on a directory standing for /home/dev."""
    home, message = tmp_path / "home", tmp_path / "termination-log"
    (home / "src").mkdir(parents=True)
    (home / "src" / "train.py").write_text("x" * 12)
    (home / ".bashrc").write_text("ab")
    shell, flag, script = home_listing.LISTING_COMMAND
    script = script.replace("/home/dev", str(home)).replace("/dev/termination-log", str(message))
    subprocess.run([shell, flag, script], check=True)
    pod = _pod({"terminated": {"exitCode": 137, "message": message.read_text()}})
    listing = home_listing.listing_of(pod)
    assert listing is not None and listing.splitlines() == [
        "f 2 .bashrc",
        f"d {(home / 'src').stat().st_size} src",
        "f 12 src/train.py",
    ]


def test_a_running_pod_is_waited_for_until_its_node_is_judged_gone():
    running = _pod({"running": {}})
    assert not home_listing.stopped(_pod({"running": {}}, deleting=False))
    assert not home_listing.stopped(running, now=DELETED_AT + timedelta(seconds=59))
    assert home_listing.stopped(running, now=DELETED_AT + timedelta(seconds=61))
    assert home_listing.stopped(_pod({"waiting": {"reason": "ContainerCreating"}}))
