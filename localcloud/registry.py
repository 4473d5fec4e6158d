"""The local registry: moto's ECR, seeded at start with the images `reserve --image` can
name here (docs/images.md, docs/local-cloud.md), each with a manifest whose layers give its
size (the stand-in's kubelet pulls for a time proportional to it: image_pulls.py).

The API's allowlist here (`LOCAL_ALLOWED_IMAGES`) allows what is seeded and a little more:
`ghcr.io/pytorch/*` holds only `pytorch-nightly:latest`, so any other tag there is an
allowed image that does not exist (422 at submit). Docker Hub's and ghcr.io's images sit
under their pull-through cache prefixes, as an EKS node pulls them through ECR."""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from localcloud.kubernetes.image_pulls import LocalRegistry

GB = 1_000_000_000
LOCAL_ALLOWED_IMAGES = (
    "ghcr.io/pytorch/*",
    "docker.io/library/ubuntu",
    "public.ecr.aws/docker/library/*",
    "ecr/gpu-dev-images/*",
)
# What the kubelet pulls without the registry: Docker Hub's official images and PyTorch's
# (the stand-in's own tests start pods from `busybox`, `pytorch/pytorch` ...), at once.
# The pause image (registry.k8s.io, public) the pre-puller's pods idle in.
KUBELET_PUBLIC_PATTERNS = (
    "docker.io/library/*",
    "docker.io/pytorch/*",
    "registry.k8s.io/pause",
)
# The account's registry here (localcloud.lambdas.ACCOUNT_ID, localcloud.stack.REGION).
ACCOUNT_REGISTRY = "123456789012.dkr.ecr.us-east-2.amazonaws.com"
# The tools image the pre-puller copies its no-op from (seeded below).
LOCAL_TOOLS_IMAGE = f"{ACCOUNT_REGISTRY}/gpu-dev-images/tools:1"


@dataclass(frozen=True)
class SeededImage:
    repository: str  # in the account's registry (a cache prefix for upstream images)
    tag: str
    size_bytes: int


SEEDED_IMAGES = (
    # The default image (settings' pod_image), through the Docker Hub cache.
    SeededImage("docker-hub/pytorch/pytorch", "2.8.0-cuda12.9-cudnn9-devel", int(9.3 * GB)),
    SeededImage("github/pytorch/pytorch-nightly", "latest", int(11.8 * GB)),
    SeededImage("docker-hub/library/ubuntu", "24.04", 29_700_000),
    SeededImage("ecr-public/docker/library/python", "3.12-slim", 45_100_000),
    SeededImage("gpu-dev-images/team-cuda", "1", int(6.2 * GB)),
    # The tools image (deploy/tools-image/): the pre-puller's no-op (gpudev/prepuller/).
    SeededImage("gpu-dev-images/tools", "1", 48_000_000),
)


def manifest(image: SeededImage, layers: int = 4) -> str:
    """A Docker v2 manifest whose layers add up to the image's size (distinct digests: moto
    derives the image digest from them)."""
    sizes = [image.size_bytes // layers] * (layers - 1)
    sizes.append(image.size_bytes - sum(sizes))

    def digest(part: str) -> str:
        return (
            "sha256:"
            + hashlib.sha256(f"{image.repository}:{image.tag}:{part}".encode()).hexdigest()
        )

    return json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": {
                "mediaType": "application/vnd.docker.container.image.v1+json",
                "size": 7_000,
                "digest": digest("config"),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                    "size": size,
                    "digest": digest(str(index)),
                }
                for index, size in enumerate(sizes)
            ],
        }
    )


def seed_registry(ecr: Any, images: tuple[SeededImage, ...] = SEEDED_IMAGES) -> None:
    for image in images:
        with contextlib.suppress(ecr.exceptions.RepositoryAlreadyExistsException):
            ecr.create_repository(repositoryName=image.repository)
        with contextlib.suppress(ecr.exceptions.ImageAlreadyExistsException):  # a restart
            ecr.put_image(
                repositoryName=image.repository, imageManifest=manifest(image), imageTag=image.tag
            )


def local_registry(ecr: Any, account_registry: str, pod_image: str | None) -> LocalRegistry:
    """The kubelet's view: moto's ECR, Docker Hub's official and PyTorch images, and the
    deployment's pod image wherever it is (the lifecycle tests' `registry.local/...`)."""
    public = KUBELET_PUBLIC_PATTERNS + ((pod_image,) if pod_image else ())
    return LocalRegistry(ecr, account_registry, public)
