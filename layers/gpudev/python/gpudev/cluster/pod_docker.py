"""Docker inside the dev server (`reserve --docker`, docs/images.md#docker-inside-the-dev-
server): a docker:dind sidecar beside the dev container.

- The daemon listens on a unix socket only, in an emptyDir both containers mount: nothing
  outside the pod can reach it (no TCP port, so no TLS to manage), and `DOCKER_HOST` in the
  dev container (and, through the startup script, in every SSH session) points at it.
- The `docker` command comes from the sidecar's image too: an init container copies its
  static client into an emptyDir at /opt/gpu-dev-docker/bin, which the startup script puts
  at the end of PATH, and its plugins (compose, buildx), which the startup script links
  where the client looks for them (any dev image works, none needs Docker installed).
- The socket belongs to group `DOCKER_GID`: the pod's supplementalGroups give it to every
  process the image's own entrypoint runs, and the startup script adds `dev` to it.
- Images, layers and containers live in their own emptyDir at /var/lib/docker, on the node's
  local disk with a size limit: past it the kubelet evicts the pod, as for /workspace. Its
  size is half the pod's /workspace share, which keeps the other half: the node's disk is
  sized for those shares (cluster/workspace.py), so Docker never promises more than it has.
  The dev container's ephemeral-storage limit shrinks by as much and the sidecar's carries
  it, so the kubelet's pod-wide sum stays what the pod may use.
- The sidecar is privileged: dockerd mounts overlay filesystems and makes cgroups and
  network namespaces, and docker:dind-rootless needs privileged too (docs/decisions.md
  2026-11-28). Pod Security `baseline` refuses it, so such pods live in gpu-dev-docker,
  which enforces `privileged` (deploy/kubernetes/namespace.yaml).
- The sidecar is ready once `docker version` answers on the socket, so the reservation is
  active when `docker` works.
- What Docker runs shares the sidecar's CPU and memory limits, not the dev container's. It
  gets no GPU: docker:dind has no NVIDIA runtime (`docker run --gpus` fails there)."""

from __future__ import annotations

from typing import Any

DOCKER_CONTAINER = "docker"
SOCKET_VOLUME = "docker-socket"
STORAGE_VOLUME = "docker-storage"
CLI_VOLUME = "docker-cli"
CLI_INIT = "docker-cli"
CLI_DIR = "/opt/gpu-dev-docker"
IMAGE_CLI = "/usr/local/bin/docker"  # where docker:dind keeps its static client
IMAGE_PLUGINS = "/usr/local/libexec/docker/cli-plugins"  # and its compose and buildx
SOCKET_DIR = "/run/gpu-dev-docker"
DOCKER_HOST = f"unix://{SOCKET_DIR}/docker.sock"
DOCKER_GID = 2375  # the socket's group: dev's in SSH sessions, the pod's supplemental group
STORAGE = "ephemeral-storage"
SIDECAR_WRITES_GIB = 1  # the sidecar's own writes, beside /var/lib/docker (an emptyDir)
# Docker's containers run in the sidecar's cgroup: these bound them, beside the dev container.
SIDECAR_RESOURCES = {
    "requests": {"cpu": "100m", "memory": "256Mi"},
    "limits": {"cpu": "4", "memory": "16Gi"},
}


# Ready once the daemon answers on the socket: a reservation is active when `docker` works.
DOCKER_READINESS_PROBE = {
    "exec": {"command": ["docker", f"--host={DOCKER_HOST}", "version"]},
    "initialDelaySeconds": 2,
    "periodSeconds": 3,
    "timeoutSeconds": 3,
    "failureThreshold": 3,
}


def docker_sidecar(image: str) -> dict[str, Any]:
    """dockerd, through docker:dind's own entrypoint (dockerd-entrypoint.sh, which runs it
    under the `dind` wrapper that sets up cgroup nesting). The first argument is `dockerd`:
    given only options, the entrypoint would add its defaults, `--host=tcp://0.0.0.0:2375`
    among them (2376 with TLS), a port anyone reaching the pod could use. DOCKER_TLS_CERTDIR
    empty: it makes no certificates either way."""
    return {
        "name": DOCKER_CONTAINER,
        "image": image,
        "args": ["dockerd", f"--host={DOCKER_HOST}", f"--group={DOCKER_GID}"],
        "env": [{"name": "DOCKER_TLS_CERTDIR", "value": ""}],
        "readinessProbe": DOCKER_READINESS_PROBE,
        "resources": SIDECAR_RESOURCES,
        "securityContext": {"privileged": True},
        "volumeMounts": [
            {"name": SOCKET_VOLUME, "mountPath": SOCKET_DIR},
            {"name": STORAGE_VOLUME, "mountPath": "/var/lib/docker"},
        ],
    }


def cli_init_container(image: str) -> dict[str, Any]:
    """Copies the image's static `docker` client and its plugins (compose, buildx) into the
    shared volume, then exits."""
    return {
        "name": CLI_INIT,
        "image": image,
        "command": [
            "/bin/sh",
            "-c",
            f"mkdir -p {CLI_DIR}/bin && cp {IMAGE_CLI} {CLI_DIR}/bin/ "
            f"&& if [ -d {IMAGE_PLUGINS} ]; then cp -R {IMAGE_PLUGINS} {CLI_DIR}/; fi",
        ],
        "resources": {
            "requests": {"cpu": "50m", "memory": "32Mi"},
            "limits": {"cpu": "500m", "memory": "64Mi"},
        },
        "securityContext": {
            "capabilities": {"drop": ["ALL"]},
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
        },
        "volumeMounts": [{"name": CLI_VOLUME, "mountPath": CLI_DIR}],
    }


def _gib(quantity: str) -> int:
    return int(quantity.removesuffix("Gi"))


def split_workspace(spec: dict[str, Any]) -> int:
    """Half of /workspace's sizeLimit (and of the dev container's ephemeral-storage limit)
    goes to Docker's storage: its size in GiB."""
    workspace = next(v for v in spec["volumes"] if v["name"] == "workspace")["emptyDir"]
    share = _gib(workspace["sizeLimit"])
    docker = share // 2
    workspace["sizeLimit"] = f"{share - docker}Gi"
    limits = spec["containers"][0]["resources"]["limits"]
    limits[STORAGE] = f"{_gib(limits[STORAGE]) - docker}Gi"
    return docker


def add_docker(spec: dict[str, Any], image: str) -> None:
    """`spec` (a dev pod's, objects.pod) gets the sidecar and the client's init container,
    their volumes, the socket's and the client's mounts and `DOCKER_HOST` in the dev
    container, and the socket's group for the pod."""
    storage = split_workspace(spec)
    spec["volumes"] += [
        {"name": SOCKET_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
        {"name": STORAGE_VOLUME, "emptyDir": {"sizeLimit": f"{storage}Gi"}},
        {"name": CLI_VOLUME, "emptyDir": {"sizeLimit": "256Mi"}},
    ]
    dev = spec["containers"][0]
    dev.setdefault("volumeMounts", []).extend(
        [
            {"name": SOCKET_VOLUME, "mountPath": SOCKET_DIR},
            {"name": CLI_VOLUME, "mountPath": CLI_DIR, "readOnly": True},
        ]
    )
    dev.setdefault("env", []).extend(
        [
            {"name": "DOCKER_HOST", "value": DOCKER_HOST},
            {"name": "GPU_DEV_DOCKER_GID", "value": str(DOCKER_GID)},
            {"name": "GPU_DEV_DOCKER_CLI", "value": f"{CLI_DIR}/bin"},
            {"name": "GPU_DEV_DOCKER_PLUGINS", "value": f"{CLI_DIR}/cli-plugins"},
        ]
    )
    spec["securityContext"]["supplementalGroups"] = [DOCKER_GID]
    sidecar = docker_sidecar(image)
    sidecar["resources"] = {
        "requests": {**SIDECAR_RESOURCES["requests"], STORAGE: f"{SIDECAR_WRITES_GIB}Gi"},
        "limits": {**SIDECAR_RESOURCES["limits"], STORAGE: f"{storage + SIDECAR_WRITES_GIB}Gi"},
    }
    spec["containers"].append(sidecar)
    spec["initContainers"] = [*spec.get("initContainers", []), cli_init_container(image)]
