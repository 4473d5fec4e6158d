"""Which images a deployment allows, and where its nodes pull each one from.

The operator's list (CDK context `gpudev:allowedImages`, the API's `ALLOWED_IMAGES`) holds
patterns `registry/repository` or `registry/prefix/*`: the first allows that repository, the
second every repository under the prefix, at any depth. The registry is matched exactly
(never a wildcard: `docker.io.example.com` is not `docker.io`); `ecr` stands for the
deployment's own ECR registry (`<account>.dkr.ecr.<region>.amazonaws.com`). The default image
(CDK context `podImage`) is always allowed.

Nodes never pull from the internet directly: an upstream registry's image comes through the
ECR pull-through cache rule declared for it (cdk_app/images.py), under the rule's prefix
(`docker.io/pytorch/pytorch` → `<ecr>/docker-hub/pytorch/pytorch`). NGC (`nvcr.io`) is not a
registry ECR's pull-through cache takes (AWS's list: ECR Public, Docker Hub, GitHub, Quay,
registry.k8s.io, GitLab, Azure, Chainguard, ECR), so its images are mirrored into the team
repository instead, and a pattern naming `nvcr.io` is refused with that sentence."""

from __future__ import annotations

from dataclasses import dataclass

from gpudev.errors import InvalidRequest, shown
from gpudev.images.reference import (
    PATH_COMPONENT,
    ImageReference,
    MalformedImageReference,
    parse_image_reference,
)

OWN_REGISTRY = "ecr"  # a pattern's registry: the deployment's own ECR registry
# Upstream registry → the ECR repository prefix of its pull-through cache rule
# (cdk_app/images.py declares the same rules; tests/unit/test_image_allowlist.py keeps the
# two in step).
PULL_THROUGH_PREFIXES = {
    "docker.io": "docker-hub",
    "ghcr.io": "github",
    "public.ecr.aws": "ecr-public",
}
MIRROR_ONLY = {"nvcr.io": "NGC is not an upstream ECR's pull-through cache takes"}


class ImageNotAllowed(InvalidRequest):
    """A well-formed reference from a registry or repository the operator does not allow."""


class BadImagePattern(ValueError):
    """An operator's allowlist entry that cannot be read (a deployment setting: fails the
    function's settings at first use, named)."""


def own_registry(account_id: str, region: str) -> str:
    return f"{account_id}.dkr.ecr.{region}.amazonaws.com"


@dataclass(frozen=True)
class ImagePattern:
    registry: str  # a host, or OWN_REGISTRY
    repository: str  # a repository, or a prefix when `prefix`
    prefix: bool

    @classmethod
    def parse(cls, text: str) -> ImagePattern:
        entry = text.strip()
        registry, slash, path = entry.partition("/")
        if not slash or not registry or not path:
            raise BadImagePattern(f"image pattern {entry!r}: registry/repository[/*]")
        if registry in MIRROR_ONLY:
            raise BadImagePattern(
                f"image pattern {entry!r}: {MIRROR_ONLY[registry]}; mirror its images into "
                "the team repository (docs/images.md)"
            )
        if registry != OWN_REGISTRY and registry not in PULL_THROUGH_PREFIXES:
            raise BadImagePattern(
                f"image pattern {entry!r}: the registry must be {OWN_REGISTRY!r} (this "
                f"deployment's ECR) or one with a pull-through cache rule: "
                f"{', '.join(sorted(PULL_THROUGH_PREFIXES))}"
            )
        prefix = path.endswith("/*") or path == "*"
        repository = path.removesuffix("*").removesuffix("/")
        if repository and not all(PATH_COMPONENT.match(c) for c in repository.split("/")):
            raise BadImagePattern(
                f"image pattern {entry!r}: repository components are lower-case letters and "
                "digits separated by '.', '_' or '-'; '*' only as the last component"
            )
        if not repository and registry == OWN_REGISTRY:
            raise BadImagePattern(
                f"image pattern {entry!r}: name a repository or prefix of the account's ECR"
            )
        return cls(registry, repository, prefix)

    def matches(self, registry: str, repository: str) -> bool:
        if registry != self.registry:
            return False
        if not self.prefix:
            return repository == self.repository
        return not self.repository or repository.startswith(f"{self.repository}/")


def parse_image_patterns(text: str) -> tuple[ImagePattern, ...]:
    """The comma-separated allowlist of the API's settings."""
    return tuple(ImagePattern.parse(entry) for entry in text.split(",") if entry.strip())


@dataclass(frozen=True)
class ImagePolicy:
    """What the API allows: the default image, the operator's patterns, and the account's
    registry they pull through."""

    default_image: str
    patterns: tuple[ImagePattern, ...]
    registry: str  # own_registry(account, region)

    def check(self, text: str) -> ImageReference:
        """The parsed reference when allowed; `MalformedImageReference` (400) or
        `ImageNotAllowed` (422) otherwise."""
        reference = parse_image_reference(text)
        if self.is_default(reference):
            return reference
        registry = OWN_REGISTRY if reference.registry == self.registry else reference.registry
        if any(p.matches(registry, reference.repository) for p in self.patterns):
            return reference
        raise ImageNotAllowed(
            f"image {shown(text)} is not allowed here: {self._allowed_sentence()}",
            field="image",
            allowed=self._allowed_sentence(),
            hint="`gpu-dev reserve` without --image uses the default image",
        )

    def is_default(self, reference: ImageReference) -> bool:
        try:
            default = parse_image_reference(self.default_image)
        except MalformedImageReference:
            return False
        return (default.name, default.tag, default.digest) == (
            reference.name,
            reference.tag,
            reference.digest,
        )

    def source_repository(self, reference: ImageReference) -> str:
        """The ECR repository (name within the account's registry) the image is read and
        pulled from: itself for the account's own ECR, else under its pull-through prefix."""
        if reference.registry == self.registry:
            return reference.repository
        prefix = PULL_THROUGH_PREFIXES.get(reference.registry)
        if prefix is None:
            raise ImageNotAllowed(
                f"registry {shown(reference.registry)} has no pull-through cache rule here",
                field="image",
                allowed=self._allowed_sentence(),
            )
        return f"{prefix}/{reference.repository}"

    def _allowed_sentence(self) -> str:
        allowed = [f"the default image {self.default_image}"]
        for p in self.patterns:
            host = self.registry if p.registry == OWN_REGISTRY else p.registry
            path = "/".join(part for part in (p.repository, "*" if p.prefix else "") if part)
            allowed.append(f"{host}/{path}")
        return "; ".join(allowed)
