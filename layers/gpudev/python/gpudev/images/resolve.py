"""An allowed image's digest, read from ECR when the reservation is submitted: the pod runs
`<registry>/<repository>@sha256:…`, so what starts is what was checked, whatever the tag
points at later.

One `BatchGetImage` (the call a registry pull makes for the manifest) on the account's
repository, or on the pull-through cache's repository for an upstream image. The ECR client
is handed in (`AwsClients.ecr` in the API; moto's in tests and the local cloud)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from gpudev.errors import InvalidRequest, Unavailable, shown
from gpudev.images.allowlist import ImagePolicy
from gpudev.images.reference import ImageReference

# Manifest types a kubelet pulls: a single image or an index of them (ECR answers with the
# first of these the image has).
ACCEPTED_MEDIA_TYPES = [
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
]
_MISSING = {"RepositoryNotFoundException", "ImageNotFoundException"}
# The API's role may not read the repository: a deployment's setting, not a passing fault, so
# a retry never helps (cdk_app/images.py grants the allowlist's repositories only).
_DENIED = {"AccessDeniedException", "AccessDenied"}


class ImageNotFound(InvalidRequest):
    """An allowed reference whose repository or tag the registry does not have."""


class ImageNotReadable(InvalidRequest):
    """An allowed reference whose ECR repository the API's role may not read (422: permanent,
    the user can choose another image; the hint tells an operator what to grant)."""


@dataclass(frozen=True)
class ResolvedImage:
    reference: str  # normalized: registry/repository[:tag][@digest]
    digest: str  # sha256:…
    pull: str  # what the pod runs: <registry>/<source repository>@<digest>


def resolve_image(ecr: Any, policy: ImagePolicy, text: str) -> ResolvedImage | None:
    """`text` checked against `policy` (400 malformed, 422 not allowed) and resolved to a
    digest in ECR (422 `ImageNotFound` when the registry lacks it, `ImageNotReadable` when
    the API may not read it; 503 when ECR fails). None for the deployment's default image:
    exactly as no image, it is not resolved and the pod runs `podImage`."""
    reference = policy.check(text)
    if policy.is_default(reference):
        return None
    repository = policy.source_repository(reference)
    image_id = (
        {"imageDigest": reference.digest} if reference.digest else {"imageTag": reference.tag}
    )
    try:
        answer = ecr.batch_get_image(
            repositoryName=repository,
            imageIds=[image_id],
            acceptedMediaTypes=ACCEPTED_MEDIA_TYPES,
        )
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in _MISSING:
            raise _not_found(text, reference) from error
        if error.response.get("Error", {}).get("Code") in _DENIED:
            raise ImageNotReadable(
                f"image {shown(text)} is allowed, but this deployment cannot read its "
                f"repository {repository!r} in ECR",
                field="image",
                hint="an operator must let the API's role call ecr:BatchGetImage on it "
                "(docs/images.md#the-registry); until then reserve without --image",
            ) from error
        raise Unavailable(
            f"the image registry did not answer for {shown(text)}; try again"
        ) from error
    images = answer.get("images") or []
    if not images:
        raise _not_found(text, reference)
    digest = images[0]["imageId"]["imageDigest"]
    if reference.digest and digest != reference.digest:
        raise _not_found(text, reference)
    return ResolvedImage(str(reference), digest, f"{policy.registry}/{repository}@{digest}")


def _not_found(text: str, reference: ImageReference) -> ImageNotFound:
    what = f"digest {reference.digest}" if reference.digest else f"tag {reference.tag!r}"
    return ImageNotFound(
        f"image {shown(text)} does not exist: {reference.name} has no {what}",
        field="image",
        hint="check the name and tag (`docker manifest inspect` shows whether it exists)",
    )


class ImageResolver:
    """The seam `submit_reservation` resolves images through: an ECR client and the policy.
    `deployed()` builds this environment's from its settings at first use."""

    def __init__(self, ecr: Any, policy: ImagePolicy):
        self._ecr = ecr
        self.policy = policy

    def resolve(self, text: str) -> ResolvedImage | None:
        """None: the default image, exactly as no --image."""
        return resolve_image(self._ecr, self.policy, text)

    @classmethod
    def deployed(cls) -> ImageResolver:
        from gpudev.aws import aws_clients
        from gpudev.images.allowlist import own_registry, parse_image_patterns
        from gpudev.settings import api_settings, aws_settings, lifecycle_settings

        api = api_settings()
        policy = ImagePolicy(
            default_image=lifecycle_settings().pod_image,
            patterns=parse_image_patterns(api.allowed_images),
            registry=own_registry(api.deployment_account_id, aws_settings().aws_region),
        )
        return cls(aws_clients().ecr, policy)
