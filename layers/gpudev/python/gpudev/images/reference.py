"""A strict parser for container image references, as the Docker distribution grammar
(github.com/distribution/reference, `reference.go`) states them:

    reference  := name [ ":" tag ] [ "@" digest ]
    name       := [ domain "/" ] path-component [ "/" path-component ]*
    domain     := domain-component [ "." domain-component ]* [ ":" port ]
    path-component := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
    tag        := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
    digest     := "sha256:" 64 lower-case hex digits

The first component is a registry when it has a "." or a ":" or is `localhost`, as Docker
reads it; otherwise the image is Docker Hub's (`docker.io`, one-component names under
`library/`). A name is at most 255 characters. Other digest algorithms, IP-literal hosts
and upper-case repository names are refused: ECR and the kubelet take none of them here.
Anything else is `MalformedImageReference` (400), with the part at fault named."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudev.errors import MalformedInput, shown

DOCKER_HUB = "docker.io"
_DOCKER_HUB_ALIASES = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})
MAX_NAME_LENGTH = 255
MAX_REFERENCE_LENGTH = 512

_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
DOMAIN = re.compile(rf"^{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]{{1,5}})?$")
PATH_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$")
TAG = re.compile(r"^[\w][\w.-]{0,127}$", re.ASCII)
DIGEST = re.compile(r"^sha256:[a-f0-9]{64}$")

ALLOWED = (
    "[registry/]repository[:tag][@sha256:<64 hex digits>], e.g. ghcr.io/pytorch/pytorch-nightly:"
    "latest or ubuntu:24.04"
)


class MalformedImageReference(MalformedInput):
    def __init__(self, text: str, problem: str):
        super().__init__(
            f"{shown(text)} is not an image reference: {problem}",
            field="image",
            allowed=ALLOWED,
        )


@dataclass(frozen=True)
class ImageReference:
    """A parsed reference: `registry` is always set (docker.io when the text had none),
    `repository` is the path within it; a tag, a digest, or both. Neither given: `latest`,
    as `docker pull` reads it."""

    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def name(self) -> str:
        return f"{self.registry}/{self.repository}"

    def __str__(self) -> str:
        tag = f":{self.tag}" if self.tag else ""
        digest = f"@{self.digest}" if self.digest else ""
        return f"{self.name}{tag}{digest}"


def parse_image_reference(text: str) -> ImageReference:
    """The reference `text` states, normalized (registry explicit, Docker Hub's official
    images under `library/`); `MalformedImageReference` says what is wrong otherwise."""
    if not isinstance(text, str) or not text:
        raise MalformedImageReference(str(text), "it is empty")
    if len(text) > MAX_REFERENCE_LENGTH:
        raise MalformedImageReference(text, f"longer than {MAX_REFERENCE_LENGTH} characters")
    if text != text.strip() or any(c.isspace() or not c.isprintable() for c in text):
        raise MalformedImageReference(text, "it has spaces or control characters")
    rest, digest = _split_digest(text)
    name, tag = _split_tag(text, rest)
    registry, path = _split_registry(text, name)
    if len(name) > MAX_NAME_LENGTH:
        raise MalformedImageReference(text, f"its name is longer than {MAX_NAME_LENGTH} characters")
    components = path.split("/")
    for component in components:
        if not component:
            raise MalformedImageReference(text, "its repository has an empty path component")
        if not PATH_COMPONENT.match(component):
            raise MalformedImageReference(
                text,
                f"repository component {shown(component)} must be lower-case letters and "
                "digits, separated by '.', '_', '__' or '-'",
            )
    if registry in _DOCKER_HUB_ALIASES:
        registry = DOCKER_HUB
        if len(components) == 1:
            path = f"library/{path}"
    if tag is None and digest is None:
        tag = "latest"
    return ImageReference(registry, path, tag, digest)


def _split_digest(text: str) -> tuple[str, str | None]:
    if "@" not in text:
        return text, None
    rest, digest = text.split("@", 1)
    if not DIGEST.match(digest):
        raise MalformedImageReference(
            text, "its digest must be sha256: and 64 lower-case hex digits"
        )
    if not rest:
        raise MalformedImageReference(text, "it has a digest but no name")
    return rest, digest


def _split_tag(text: str, rest: str) -> tuple[str, str | None]:
    # A ":" after the last "/" starts the tag; one before it is a registry's port.
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon <= slash:
        return rest, None
    name, tag = rest[:colon], rest[colon + 1 :]
    if not TAG.match(tag):
        raise MalformedImageReference(
            text,
            "its tag must be 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-'",
        )
    if not name:
        raise MalformedImageReference(text, "it has a tag but no name")
    return name, tag


def _split_registry(text: str, name: str) -> tuple[str, str]:
    first, slash, path = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        if not DOMAIN.match(first):
            raise MalformedImageReference(text, f"registry {shown(first)} is not a host name")
        port = first.partition(":")[2]
        if port and not 0 < int(port) < 65536:
            raise MalformedImageReference(text, f"registry {shown(first)} has no valid port")
        return first.lower(), path
    if ":" in first or first == "localhost":  # "host:5000" with no repository after it
        raise MalformedImageReference(text, "it names a registry but no repository")
    return DOCKER_HUB, name
