"""What the pre-puller pulls and how its pod runs each image: pure functions, no I/O.

Any Linux image, with or without a shell: each image is an init container whose command is a
static busybox (`busybox true`, exit 0) that the first init container copies from the tools
image (deploy/tools-image/: /gpu-dev/bin/busybox) into an emptyDir. The kubelet pulls an
init container's image before it runs it, so once the pod's init containers have run, every
image is in the node's image store; the pod then idles in its one container (pause). A
no-op from the image itself (`sh -c true`) would fail on an image without a shell and stop
the images after it: init containers run one at a time, each must exit 0."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

NOOP_VOLUME = "prepuller-noop"
NOOP_DIR = "/prepuller"
NOOP = f"{NOOP_DIR}/busybox"
TOOLS_BUSYBOX = "/gpu-dev/bin/busybox"  # in the tools image (cluster/pod_tools.py)
COPY_CONTAINER = "copy-noop"
# The template's annotation naming the images, in order: what the plan compares (the API
# server defaults the containers' other fields, so comparing containers would always differ).
IMAGES_ANNOTATION = "gpu-dev/prepull-images"
_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": 65534,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
_RESOURCES = {
    "requests": {"cpu": "10m", "memory": "16Mi"},
    "limits": {"cpu": "100m", "memory": "32Mi"},
}


def prepull_list(default_image: str, most_used: Sequence[str], count: int) -> list[str]:
    """The default image first, then up to `count` of `most_used` (most used first), each
    once: the default image is always pulled, whatever the reservations asked for."""
    images = [default_image]
    for image in most_used:
        if len(images) > count:
            break
        if image and image not in images:
            images.append(image)
    return images


def _init_container(name: str, image: str, command: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": command,
        "resources": _RESOURCES,
        "securityContext": _SECURITY,
        "volumeMounts": [{"name": NOOP_VOLUME, "mountPath": NOOP_DIR}],
    }


def template_patch(images: Sequence[str], tools_image: str) -> dict[str, Any]:
    """A JSON merge patch (RFC 7386: lists are replaced whole) of the DaemonSet's pod
    template: the copy of the no-op, then one init container per image, in order."""
    init = [
        _init_container(COPY_CONTAINER, tools_image, [TOOLS_BUSYBOX, "cp", TOOLS_BUSYBOX, NOOP]),
        *(_init_container(f"pull-{n}", image, [NOOP, "true"]) for n, image in enumerate(images)),
    ]
    return {
        "spec": {
            "template": {
                "metadata": {"annotations": {IMAGES_ANNOTATION: annotation(images, tools_image)}},
                "spec": {
                    "initContainers": init,
                    "volumes": [
                        {"name": NOOP_VOLUME, "emptyDir": {"sizeLimit": "16Mi"}},
                    ],
                },
            }
        }
    }


def annotation(images: Sequence[str], tools_image: str) -> str:
    return " ".join([tools_image, *images])


def plan_patch(
    current: dict[str, Any], images: Sequence[str], tools_image: str
) -> dict[str, Any] | None:
    """The patch that makes the DaemonSet `current` (as read) pull `images`, or None when it
    already does: its template names the same images in the same order."""
    template = (current.get("spec") or {}).get("template") or {}
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    if annotations.get(IMAGES_ANNOTATION) == annotation(images, tools_image):
        return None
    return template_patch(images, tools_image)
