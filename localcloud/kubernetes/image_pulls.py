"""The kubelet's image pulls, against the local registry (moto's ECR), before a pod's
containers start.

A node pulls an image once and keeps it (a second pod there starts at once: a warm node).
An image is pulled when the local registry has it: one in the account's ECR registry, or an
upstream one (docker.io, ghcr.io, public.ecr.aws) that the pull-through cache holds under its
prefix, as EKS nodes pull through ECR; or when it matches one of the kubelet's public
patterns (an exact reference, a `registry/repository`, or a prefix of one ending in `*`).
A pull lasts the image's size over `bytes_per_second`, times the local cloud's clock
compression (no rate: at once); the pod waits in ContainerCreating meanwhile, with `Pulling`
and then `Pulled` events naming the time and the size.

Anything else fails as containerd fails it: the containers wait in `ErrImagePull` with the
runtime's error and a Warning `Failed` event, then in `ImagePullBackOff` (`BackOff` event)
until the back-off (10 s, doubling to 300 s, in real seconds as the kubelet counts them)
ends and the pull is tried again: an image pushed meanwhile then starts.

`refusing` is the one other way a pull fails (tests' `kubelet.image_pulls_fail`): a registry
that refuses for now (429 Too Many Requests, containerd's `Unknown`: a pull that may heal, so
the readiness check waits for its deadline). Every pull is refused then, with the same
ErrImagePull and back-off, and every image is pulled as with `imagePullPolicy: Always`, so
the fault holds on a warm node too.

`registry` is None in the stand-in's own tests: every image pulls at once, as before."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from localcloud.kubernetes import events
from localcloud.kubernetes.timestamps import now

Obj = dict[str, Any]
INITIAL_BACK_OFF_SECONDS = 10.0
MAX_BACK_OFF_SECONDS = 300.0
# Upstream registry → the ECR pull-through cache prefix its images are cached under, as the
# deployment declares them (cdk_app/images.py).
CACHE_PREFIXES = {"docker.io": "docker-hub", "ghcr.io": "github", "public.ecr.aws": "ecr-public"}


@dataclass(frozen=True)
class Pullable:
    size_bytes: int


@dataclass(frozen=True)
class Refused:
    code: str  # containerd's gRPC code: NotFound, Unknown
    detail: str


class LocalRegistry:
    """What the node can pull: moto's ECR in `account_registry`, and public patterns."""

    def __init__(self, ecr: Any, account_registry: str, public_patterns: tuple[str, ...] = ()):
        self._ecr = ecr
        self.account_registry = account_registry
        self.public_patterns = public_patterns

    def verdict(self, image: str) -> Pullable | Refused:
        registry, repository, tag, digest = split_reference(image)
        if registry == self.account_registry:
            return self._from_ecr(image, repository, tag, digest)
        prefix = CACHE_PREFIXES.get(registry)
        if prefix is not None:
            found = self._from_ecr(image, f"{prefix}/{repository}", tag, digest)
            if isinstance(found, Pullable):
                return found
        if any(_matches(pattern, image) for pattern in self.public_patterns):
            return Pullable(0)
        if prefix is not None or registry == self.account_registry:
            return _not_found(image)
        return Refused(
            "Unknown",
            f'failed to pull and unpack image "{image}": failed to resolve reference '
            f'"{image}": pull access denied, repository does not exist or may require '
            "authorization: server message: insufficient_scope: authorization failed",
        )

    def _from_ecr(
        self, image: str, repository: str, tag: str | None, digest: str | None
    ) -> Pullable | Refused:
        image_id = {"imageDigest": digest} if digest else {"imageTag": tag or "latest"}
        try:
            found = self._ecr.batch_get_image(repositoryName=repository, imageIds=[image_id])
        except ClientError:
            return _not_found(image)
        if not found.get("images"):
            return _not_found(image)
        manifest = json.loads(found["images"][0].get("imageManifest") or "{}")
        size = sum(layer.get("size", 0) for layer in manifest.get("layers") or [])
        return Pullable(size)


TOO_MANY_REQUESTS = Refused(
    "Unknown", "failed to copy: unexpected status code 429 Too Many Requests"
)  # `refusing`'s detail follows containerd's `failed to pull and unpack image "<image>": `


def _not_found(image: str) -> Refused:
    return Refused(
        "NotFound",
        f'failed to pull and unpack image "{image}": failed to resolve reference "{image}": '
        f"{image}: not found",
    )


def _matches(pattern: str, image: str) -> bool:
    """`pattern`: the image's exact reference, its `registry/repository`, or a prefix of
    that name ending in `*` (`docker.io/library/*`: Docker Hub's official images)."""
    registry, repository, _, _ = split_reference(image)
    name = f"{registry}/{repository}"
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return pattern in (image, name)


def split_reference(image: str) -> tuple[str, str, str | None, str | None]:
    """registry, repository, tag, digest, as containerd reads a reference (Docker Hub when
    the first component is no host; its one-component names under `library/`)."""
    rest, _, digest = image.partition("@")
    slash, colon = rest.rfind("/"), rest.rfind(":")
    name, tag = (rest[:colon], rest[colon + 1 :]) if colon > slash else (rest, None)
    first, sep, path = name.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        registry = "docker.io" if first in ("index.docker.io", "registry-1.docker.io") else first
        repository = path
    else:
        registry, repository = "docker.io", name
    if registry == "docker.io" and "/" not in repository:
        repository = f"library/{repository}"
    return registry, repository, tag, digest or None


@dataclass
class _Pull:
    started: float
    ready_at: float
    size_bytes: int


@dataclass
class _Failure:
    attempts: int
    retry_at: float
    refused: Refused


@dataclass
class ImagePulls:
    """The pulls of every node (one kubelet loop). `ready(pod, node)` is True once each of
    its containers' images is on the node; until then it writes the pod's waiting state."""

    store: Any
    write: Callable[[Obj, Callable[[Obj], None]], bool]
    registry: LocalRegistry | None = None
    bytes_per_second: float | None = None  # None or 0: at once
    clock_scale: float = 1.0  # the local cloud's seconds_per_hour / 3600
    # Images neither the registry nor any node has, whatever they held (tests and `make run
    # --missing-image`): refused as not found.
    missing: frozenset[str] = frozenset()
    # Every pull refused this way (TOO_MANY_REQUESTS), whatever the registry or node holds;
    # None: pulls as the registry answers.
    refusing: Refused | None = None
    _on_node: dict[str, set[str]] = field(default_factory=dict)
    _pulling: dict[tuple[str, str], _Pull] = field(default_factory=dict)
    _failed: dict[tuple[str, str], _Failure] = field(default_factory=dict)  # (pod uid, image)

    def ready(self, pod: Obj, node: str) -> bool:
        if self.registry is None and not self.missing and self.refusing is None:
            return True
        have = self._on_node.setdefault(node, set())
        for container, at in _containers(pod):
            image = container.get("image", "")
            must_pull = image not in have or image in self.missing or self.refusing is not None
            if must_pull and not self._pull(pod, node, at, image):
                return False  # refused: the pod shows it until the back-off ends
        return all(c.get("image", "") in have for c, _ in _containers(pod))

    def forget_pods_but(self, uids: set[str]) -> None:
        for key in [k for k in self._failed if k[0] not in uids]:
            del self._failed[key]

    def _pull(self, pod: Obj, node: str, at: str, image: str) -> bool:
        """False when the image is refused; True while it pulls or once pulled."""
        now = time.monotonic()
        key = (pod["metadata"]["uid"], image)
        failure = self._failed.get(key)
        if failure is not None and now < failure.retry_at:
            if not _waits_in(pod, "ImagePullBackOff"):
                self.write(
                    pod,
                    lambda p: _waiting(
                        p, at, "ImagePullBackOff", f'Back-off pulling image "{image}"'
                    ),
                )
                self._event(pod, at, "Normal", "BackOff", f'Back-off pulling image "{image}"')
                self._event(pod, at, "Warning", "Failed", "Error: ImagePullBackOff")
            return False
        pull = self._pulling.get((node, image))
        if pull is None:
            verdict = self._verdict(image)
            if isinstance(verdict, Refused):
                attempts = failure.attempts + 1 if failure else 1
                back_off = min(INITIAL_BACK_OFF_SECONDS * 2 ** (attempts - 1), MAX_BACK_OFF_SECONDS)
                self._failed[key] = _Failure(attempts, now + back_off, verdict)
                message = f"rpc error: code = {verdict.code} desc = {verdict.detail}"
                self.write(pod, lambda p: _waiting(p, at, "ErrImagePull", message))
                self._event(pod, at, "Normal", "Pulling", f'Pulling image "{image}"')
                self._event(
                    pod, at, "Warning", "Failed", f'Failed to pull image "{image}": {message}'
                )
                self._event(pod, at, "Warning", "Failed", "Error: ErrImagePull")
                return False
            self._failed.pop(key, None)
            seconds = 0.0
            if self.bytes_per_second:
                seconds = verdict.size_bytes / self.bytes_per_second * self.clock_scale
            pull = self._pulling[(node, image)] = _Pull(now, now + seconds, verdict.size_bytes)
            self._event(pod, at, "Normal", "Pulling", f'Pulling image "{image}"')
            if not pod["status"].get("containerStatuses") or _waits_in(
                pod, "ErrImagePull", "ImagePullBackOff"
            ):
                self.write(pod, lambda p: _waiting_all(p, "ContainerCreating"))
        if now < pull.ready_at:
            return True
        took = now - pull.started
        self._event(
            pod,
            at,
            "Normal",
            "Pulled",
            f'Successfully pulled image "{image}" in {took:.3f}s ({took:.3f}s including '
            f"waiting). Image size: {pull.size_bytes} bytes.",
        )
        self._on_node.setdefault(node, set()).add(image)
        del self._pulling[(node, image)]
        return True

    def _verdict(self, image: str) -> Pullable | Refused:
        if self.refusing is not None:
            detail = f'failed to pull and unpack image "{image}": {self.refusing.detail}'
            return Refused(self.refusing.code, detail)
        if image in self.missing:
            return _not_found(image)
        return self.registry.verdict(image) if self.registry else Pullable(0)

    def _event(self, pod: Obj, at: str, kind: str, reason: str, message: str) -> None:
        events.record(
            self.store,
            pod,
            kind,
            reason,
            message,
            "kubelet",
            host=pod["spec"].get("nodeName") or "",
            field_path=at,
        )


def _containers(pod: Obj) -> list[tuple[Obj, str]]:
    spec = pod["spec"]
    return [
        *((c, f"spec.initContainers{{{c['name']}}}") for c in spec.get("initContainers") or []),
        *((c, f"spec.containers{{{c['name']}}}") for c in spec.get("containers") or []),
    ]


def _waits_in(pod: Obj, *reasons: str) -> bool:
    return any(
        ((s.get("state") or {}).get("waiting") or {}).get("reason") in reasons
        for s in [
            *(pod["status"].get("initContainerStatuses") or []),
            *(pod["status"].get("containerStatuses") or []),
        ]
    )


def _waiting_all(pod: Obj, reason: str) -> None:
    """The containers wait in `reason` (a pull under way); init containers that never ran
    lose the statuses a refused pull gave them (init_containers.started reads their
    presence)."""
    status = pod["status"]
    status.setdefault("startTime", now())  # the kubelet's first sync of the pod sets it
    if not any(_ran(s) for s in status.get("initContainerStatuses") or []):
        status.pop("initContainerStatuses", None)
    status["containerStatuses"] = [
        _status(c, {"reason": reason}) for c in pod["spec"].get("containers") or []
    ]


def _ran(status: Obj) -> bool:
    state = status.get("state") or {}
    return "running" in state or "terminated" in state


def _waiting(pod: Obj, at: str, reason: str, message: str) -> None:
    """The pod while the container at `at` (`spec.initContainers{name}` or
    `spec.containers{name}`) cannot pull its image: that container waits in `reason`, the
    others as the kubelet leaves them (PodInitializing behind an init container,
    ContainerCreating beside a container); Pending, not Initialized (behind an init
    container) nor Ready, as on EKS."""
    list_name, _, rest = at.removeprefix("spec.").partition("{")
    failing = rest.rstrip("}")
    behind_init = list_name == "initContainers"
    spec, status = pod["spec"], pod["status"]

    def waiting(container: Obj, in_list: str) -> Obj:
        if container["name"] == failing and in_list == list_name:
            return {"reason": reason, "message": message}
        if in_list == "initContainers" or behind_init:
            return {"reason": "PodInitializing"}
        return {"reason": "ContainerCreating"}

    def statuses(in_list: str, key: str) -> list[Obj]:
        earlier = {s["name"]: s for s in status.get(key) or []}
        return [
            earlier[c["name"]]
            if c["name"] in earlier and _ran(earlier[c["name"]])
            else _status(c, waiting(c, in_list))
            for c in spec.get(in_list) or []
        ]

    if spec.get("initContainers"):
        status["initContainerStatuses"] = statuses("initContainers", "initContainerStatuses")
    status["containerStatuses"] = statuses("containers", "containerStatuses")
    status["phase"] = "Pending"
    moment = now()
    status.setdefault("startTime", moment)
    unready = " ".join(c["name"] for c in spec.get("containers") or [])
    conditions = [_condition("PodScheduled", moment)]
    if behind_init:
        incomplete = f"containers with incomplete status: [{failing}]"
        conditions.append(_condition("Initialized", moment, "ContainersNotInitialized", incomplete))
    else:
        conditions.append(_condition("Initialized", moment))
    for kind in ("ContainersReady", "Ready"):
        unready_message = f"containers with unready status: [{unready}]"
        conditions.append(_condition(kind, moment, "ContainersNotReady", unready_message))
    before = {c.get("type"): c for c in status.get("conditions") or []}
    for condition in conditions:  # a condition that keeps its status keeps its moment
        kept = before.get(condition["type"]) or {}
        if kept.get("status") == condition["status"] and kept.get("lastTransitionTime"):
            condition["lastTransitionTime"] = kept["lastTransitionTime"]
    status["conditions"] = conditions


def _status(container: Obj, waiting: Obj) -> Obj:
    return {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "started": False,
        "state": {"waiting": waiting},
    }


def _condition(kind: str, moment: str, reason: str | None = None, message: str = "") -> Obj:
    """True without a reason; False with the kubelet's reason and message."""
    if reason is None:
        return {"type": kind, "status": "True", "lastTransitionTime": moment}
    return {
        "type": kind,
        "status": "False",
        "lastTransitionTime": moment,
        "reason": reason,
        "message": message,
    }
