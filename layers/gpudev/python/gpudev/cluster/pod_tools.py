"""What SSH and the `dev` user need, brought by the pod itself (docs/images.md, "Any Linux
image"): with a tools image set (CDK context `gpudev:toolsImage`, built from
deploy/tools-image/), an init container copies its static bash, sshd, sudo and busybox into
an emptyDir at /opt/gpu-dev, and the dev container and the Jupyter check run the startup
scripts with that bash. The startup script puts /opt/gpu-dev/bin at the END of PATH: the
image's own commands win, the tools fill what it lacks, and nothing is installed from the
network at boot.

The dev container then runs as root whatever the image's USER says (the startup script makes
accounts and starts sshd); everything else about the container is as without tools."""

from __future__ import annotations

from typing import Any

TOOLS_DIR = "/opt/gpu-dev"
TOOLS_VOLUME = "gpu-dev-tools"
TOOLS_INIT = "gpu-dev-tools"  # the init container's name; it runs first
TOOLS_BASH = f"{TOOLS_DIR}/bin/bash"
# Where the tools image keeps them (deploy/tools-image/Dockerfile) and its static busybox.
IMAGE_TOOLS = "/gpu-dev"
IMAGE_BUSYBOX = f"{IMAGE_TOOLS}/bin/busybox"


def tools_init_container(tools_image: str) -> dict[str, Any]:
    """Copies the tools, modes (setuid sudo) and links kept, into the shared volume."""
    return {
        "name": TOOLS_INIT,
        "image": tools_image,
        "command": [IMAGE_BUSYBOX, "cp", "-a", f"{IMAGE_TOOLS}/.", f"{TOOLS_DIR}/"],
        "resources": {
            "requests": {"cpu": "50m", "memory": "32Mi"},
            "limits": {"cpu": "500m", "memory": "64Mi"},
        },
        "securityContext": {
            "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "FOWNER", "FSETID"]},
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsUser": 0,
        },
        "volumeMounts": [{"name": TOOLS_VOLUME, "mountPath": TOOLS_DIR}],
    }


def bring_tools(spec: dict[str, Any], tools_image: str) -> None:
    """`spec` (a dev pod's, objects.pod) gets the tools: the copying init container first,
    the volume, the mount and the tools' bash in the dev container and the Jupyter check."""
    spec["volumes"].append({"name": TOOLS_VOLUME, "emptyDir": {"sizeLimit": "512Mi"}})
    mount = {"name": TOOLS_VOLUME, "mountPath": TOOLS_DIR, "readOnly": True}
    for container in [*spec.get("initContainers", []), *spec["containers"]]:
        if container["command"][:1] == ["/bin/bash"]:
            container["command"] = [TOOLS_BASH, *container["command"][1:]]
        container.setdefault("volumeMounts", []).append(mount)
        container.setdefault("env", []).append({"name": "GPU_DEV_TOOLS", "value": TOOLS_DIR})
    spec["containers"][0]["securityContext"]["runAsUser"] = 0  # whatever the image's USER
    spec["initContainers"] = [tools_init_container(tools_image), *spec.get("initContainers", [])]
