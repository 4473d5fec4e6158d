"""The stand-in kubelet's image pulls (localcloud/kubernetes/image_pulls.py) against the
local registry (moto's ECR seeded by localcloud/registry.py): what exists or matches a
public pattern starts, after a pull that lasts its size over the rate (a second pod on the
node finds it there); anything else waits in ErrImagePull, then ImagePullBackOff, with the
kubelet's events, and starts once the registry has it after the back-off."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto import mock_aws

from localcloud.kubernetes import image_pulls
from localcloud.kubernetes.image_pulls import LocalRegistry, Pullable, Refused, split_reference
from localcloud.registry import SEEDED_IMAGES, SeededImage, local_registry, seed_registry
from tests.support.stand_in_cluster import NS, cluster, events_of, pod, run_until

OWN = "123456789012.dkr.ecr.us-east-2.amazonaws.com"
TEAM = f"{OWN}/gpu-dev-images/team-cuda:1"


@pytest.fixture
def ecr() -> Any:
    with mock_aws():
        client = boto3.client("ecr", region_name="us-east-2")
        seed_registry(client)
        yield client


def _running(store: Any, name: str) -> bool:
    return store.get("pods", NS, name)["status"].get("phase") == "Running"


def _waiting(store: Any, name: str) -> dict[str, Any]:
    (status,) = store.get("pods", NS, name)["status"].get("containerStatuses") or [{}]
    return (status.get("state") or {}).get("waiting") or {}


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("ubuntu", ("docker.io", "library/ubuntu", None, None)),
        ("pytorch/pytorch:2.8", ("docker.io", "pytorch/pytorch", "2.8", None)),
        ("ghcr.io/a/b:1", ("ghcr.io", "a/b", "1", None)),
        ("localhost:5000/a@sha256:ab", ("localhost:5000", "a", None, "sha256:ab")),
    ],
)
def test_a_reference_splits_as_containerd_reads_it(image: str, expected: tuple[Any, ...]):
    assert split_reference(image) == expected


def test_the_registry_knows_what_is_seeded_and_refuses_the_rest(ecr: Any):
    registry = local_registry(ecr, OWN, "registry.local/gpu-dev:lifecycle")
    team = registry.verdict(TEAM)
    assert isinstance(team, Pullable) and team.size_bytes == int(6.2 * 1e9)
    nightly = registry.verdict("ghcr.io/pytorch/pytorch-nightly:latest")
    assert isinstance(nightly, Pullable) and nightly.size_bytes > 10e9
    assert registry.verdict("busybox") == Pullable(0)  # Docker Hub's official: public
    assert registry.verdict("registry.local/gpu-dev:lifecycle") == Pullable(0)  # the pod image
    missing = registry.verdict(f"{OWN}/gpu-dev-images/team-cuda:2")
    assert isinstance(missing, Refused) and missing.code == "NotFound"
    assert isinstance(registry.verdict("ghcr.io/pytorch/pytorch-nightly:old"), Refused)
    denied = registry.verdict("quay.io/someone/image:1")
    assert isinstance(denied, Refused) and denied.code == "Unknown"
    assert "pull access denied" in denied.detail


def test_an_image_in_the_registry_is_pulled_for_its_size_then_found_on_the_node(ecr: Any):
    simulated = cluster("node-a")
    store = simulated.store
    pulls = simulated.kubelet.image_pulls
    pulls.registry = LocalRegistry(ecr, OWN)
    pulls.bytes_per_second = 6.2e9 / 0.3  # the team image in 0.3 s
    store.create("pods", NS, pod("cold", image=TEAM, nodeName="node-a"))
    run_until(simulated, lambda: _waiting(store, "cold").get("reason") == "ContainerCreating")
    run_until(simulated, lambda: _running(store, "cold"))
    messages = [e["message"] for e in events_of(store, "cold") if e["reason"] == "Pulled"]
    assert any("Image size: 6200000000 bytes" in m for m in messages)
    store.create("pods", NS, pod("warm", image=TEAM, nodeName="node-a"))
    run_until(simulated, lambda: _running(store, "warm"))
    assert "Pulling" not in [e["reason"] for e in events_of(store, "warm")]


def test_an_image_the_registry_lacks_waits_in_err_image_pull_then_back_off(ecr: Any):
    simulated = cluster("node-a")
    store = simulated.store
    simulated.kubelet.image_pulls.registry = LocalRegistry(ecr, OWN)
    image = f"{OWN}/gpu-dev-images/team-cuda:2"
    store.create("pods", NS, pod("missing", image=image, nodeName="node-a"))
    first = run_until(simulated, lambda: _waiting(store, "missing") or None)
    assert first["reason"] == "ErrImagePull"
    assert first["message"].startswith("rpc error: code = NotFound desc = failed to pull")
    later = run_until(
        simulated, lambda: _waiting(store, "missing").get("reason") == "ImagePullBackOff"
    )
    assert later
    assert _waiting(store, "missing")["message"] == f'Back-off pulling image "{image}"'
    reasons = [(e["type"], e["reason"], e["message"]) for e in events_of(store, "missing")]
    assert ("Warning", "Failed", "Error: ErrImagePull") in reasons
    assert ("Normal", "BackOff", f'Back-off pulling image "{image}"') in reasons
    assert ("Warning", "Failed", "Error: ImagePullBackOff") in reasons
    assert any(m.startswith(f'Failed to pull image "{image}": rpc error') for _, _, m in reasons)
    assert store.get("pods", NS, "missing")["status"].get("phase") == "Pending"


def test_an_image_pushed_during_the_back_off_starts_at_the_next_try(
    ecr: Any, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(image_pulls, "INITIAL_BACK_OFF_SECONDS", 0.2)
    simulated = cluster("node-a")
    store = simulated.store
    simulated.kubelet.image_pulls.registry = LocalRegistry(ecr, OWN)
    image = f"{OWN}/gpu-dev-images/team-cuda:2"
    store.create("pods", NS, pod("later", image=image, nodeName="node-a"))
    run_until(simulated, lambda: _waiting(store, "later").get("reason") == "ImagePullBackOff")
    seed_registry(ecr, (SeededImage("gpu-dev-images/team-cuda", "2", 1000),))
    run_until(simulated, lambda: _running(store, "later"))


def test_without_a_registry_every_image_starts_as_before():
    simulated = cluster("node-a")
    simulated.store.create("pods", NS, pod("any", image="quay.io/x/y:1", nodeName="node-a"))
    run_until(simulated, lambda: _running(simulated.store, "any"))


def test_the_seeded_images_include_the_default_pod_image():
    from gpudev.settings import LifecycleSettings

    default = LifecycleSettings().pod_image  # pytorch/pytorch:<tag>: Docker Hub's cache
    repository, tag = default.split(":")
    assert SeededImage(f"docker-hub/{repository}", tag, SEEDED_IMAGES[0].size_bytes) in (
        SEEDED_IMAGES
    )


def test_refused_pulls_are_the_same_path_as_missing_images_and_hold_on_a_warm_node(
    ecr: Any, monkeypatch: pytest.MonkeyPatch
):
    # `kubelet.image_pulls_fail` is `ImagePulls.refusing`: containerd's Unknown (429), with
    # ErrImagePull then ImagePullBackOff, even for an image the node already has.
    monkeypatch.setattr(image_pulls, "INITIAL_BACK_OFF_SECONDS", 0.2)
    simulated = cluster("node-a")
    store, kubelet = simulated.store, simulated.kubelet
    kubelet.image_pulls.registry = LocalRegistry(ecr, OWN)
    store.create("pods", NS, pod("warm", image=TEAM, nodeName="node-a"))
    run_until(simulated, lambda: _running(store, "warm"))
    kubelet.image_pulls_fail = True
    assert kubelet.image_pulls.refusing == image_pulls.TOO_MANY_REQUESTS
    store.create("pods", NS, pod("refused", image=TEAM, nodeName="node-a"))
    first = run_until(simulated, lambda: _waiting(store, "refused") or None)
    assert first["reason"] == "ErrImagePull"
    assert first["message"] == (
        f'rpc error: code = Unknown desc = failed to pull and unpack image "{TEAM}": failed to '
        "copy: unexpected status code 429 Too Many Requests"
    )
    run_until(simulated, lambda: _waiting(store, "refused").get("reason") == "ImagePullBackOff")
    reasons = {(e["type"], e["reason"]) for e in events_of(store, "refused")}
    assert {("Warning", "Failed"), ("Normal", "BackOff")} <= reasons
    kubelet.image_pulls_fail = False
    assert kubelet.image_pulls.refusing is None
    run_until(simulated, lambda: _running(store, "refused"))  # the next try after the back-off
