"""`reserve --image` end to end on the local cloud (docs/images.md): an allowed image
reaches active with its pod running the digest the API resolved in moto's ECR (through the
pull-through cache prefix, as EKS nodes pull it) and `show` giving the reference and the
digest; a malformed reference is 400, a registry outside the allowlist and an allowed image
the registry lacks are 422 with a sentence, and none of them writes anything."""

from __future__ import annotations

from typing import Any

import pytest

from gpudev.settings import LifecycleSettings
from localcloud.lambdas import ACCOUNT_ID
from localcloud.stack import REGION, LocalCloud
from tests.lifecycle.helpers import objects_of, reserve, wait_for_status

NIGHTLY = "ghcr.io/pytorch/pytorch-nightly"
REGISTRY = f"{ACCOUNT_ID}.dkr.ecr.{REGION}.amazonaws.com"


def _digest(cloud: LocalCloud, repository: str) -> str:
    assert cloud.aws is not None
    details = cloud.aws.client("ecr").describe_images(repositoryName=repository)["imageDetails"]
    (image,) = details
    return str(image["imageDigest"])


def test_an_allowed_image_reaches_active_and_its_pod_runs_the_digest(api, local_cloud):
    reservation = reserve(api, image=NIGHTLY)
    digest = _digest(local_cloud, "github/pytorch/pytorch-nightly")
    assert reservation["image"] == f"{NIGHTLY}:latest"
    assert reservation["image_digest"] == digest
    active = wait_for_status(api, reservation["reservation_id"], "active")
    assert (active["image"], active["image_digest"]) == (f"{NIGHTLY}:latest", digest)
    (pod,) = objects_of(local_cloud, reservation["reservation_id"])["pods"]
    pulled = f"{REGISTRY}/github/pytorch/pytorch-nightly@{digest}"
    assert [c["image"] for c in pod["spec"]["containers"]] == [pulled]
    assert {c["image"] for c in pod["spec"].get("initContainers") or []} <= {pulled}


def test_a_team_image_in_the_accounts_registry_reaches_active(api, local_cloud):
    image = f"{REGISTRY}/gpu-dev-images/team-cuda:1"
    reservation = reserve(api, image=image)
    wait_for_status(api, reservation["reservation_id"], "active")
    (pod,) = objects_of(local_cloud, reservation["reservation_id"])["pods"]
    digest = _digest(local_cloud, "gpu-dev-images/team-cuda")
    assert pod["spec"]["containers"][0]["image"] == f"{REGISTRY}/gpu-dev-images/team-cuda@{digest}"


def test_the_default_image_named_runs_as_without_image(api, local_cloud):
    default = local_cloud.options.pod_image or LifecycleSettings().pod_image
    reservation = reserve(api, image=default)
    assert (reservation["image"], reservation["image_digest"]) == (None, None)
    wait_for_status(api, reservation["reservation_id"], "active")
    (pod,) = objects_of(local_cloud, reservation["reservation_id"])["pods"]
    assert pod["spec"]["containers"][0]["image"] == default  # podImage, no digest lookup


def _count(api: Any) -> int:
    return len(api.call("GET", "/v1/reservations?limit=200").body["reservations"])


@pytest.mark.parametrize(
    ("image", "status", "sentence"),
    [
        ("quay.io/pytorch/pytorch:1", 422, "is not allowed here"),
        ("debian:12", 422, "is not allowed here"),
        (f"{NIGHTLY}:no-such-tag", 422, "does not exist"),
        (f"{REGISTRY}/gpu-dev-images/team-cuda:2", 422, "does not exist"),
        ("ghcr.io/PyTorch/x", 400, "is not an image reference"),
        ("ubuntu@sha256:abc", 400, "is not an image reference"),
    ],
)
def test_a_refused_image_is_answered_with_a_sentence_and_writes_nothing(
    api, image: str, status: int, sentence: str
):
    before = _count(api)
    body = {"gpu_type": "t4", "gpu_count": 1, "hours": 1, "github_user": "alice", "image": image}
    reply = api.call("POST", "/v1/reservations", body=body)
    assert reply.status == status, reply.body
    assert sentence in reply.body["message"]
    assert reply.body["field"] == "image"
    assert _count(api) == before
