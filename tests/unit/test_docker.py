"""`reserve --docker` (docs/images.md#docker-inside-the-dev-server) without I/O: the
sentences it is refused with, the pod's shape (the privileged docker:dind sidecar, its socket
and storage volumes, the client's init container, DOCKER_HOST, the socket's group), the
namespace it runs in, the stand-in's Pod Security admission refusing it in gpu-dev and
admitting it in gpu-dev-docker, and the CLI's request and panel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gpudev.cluster import objects
from gpudev.cluster.names import Placement
from gpudev.cluster.pod_docker import (
    CLI_DIR,
    CLI_INIT,
    DOCKER_CONTAINER,
    DOCKER_GID,
    DOCKER_HOST,
    SOCKET_DIR,
)
from gpudev.docker.request import ALLOW_DOCKER_CONTEXT, check_docker_request, check_docker_shape
from gpudev.errors import InvalidRequest
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.settings import ClusterSettings, DockerSettings
from gpudev_cli import context, render
from gpudev_cli.main import cli
from localcloud.kubernetes import pod_security, validation
from localcloud.kubernetes.container_logs import dockerd_output
from tests.unit.test_manifest_drift import _catalogue, _reservation

T4 = next(t for t in _catalogue() if t.gpu_type == "t4")
IMAGE = "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"
DIND = "docker:27-dind"
NAMESPACES = {ns["metadata"]["name"]: ns for ns in pod_security.namespaces()}


@pytest.mark.parametrize(
    ("check", "sentence"),
    [
        (
            lambda: check_docker_request(False, False),
            f"not offered by this deployment.*{ALLOW_DOCKER_CONTEXT}",
        ),
        (lambda: check_docker_request(True, True), "--docker and --profiling do not go together"),
        (
            lambda: check_docker_shape(_type("h100", 8), 16, 2),
            "--docker runs on one node, and this request needs 2",
        ),
        (
            lambda: check_docker_shape(_type("t4", 4), 1, 1),
            "--docker takes a whole node, and a t4 node has 4 GPUs.*ask for 4 GPUs",
        ),
        (
            lambda: check_docker_shape(_type("cpu-x86", 0), 0, 1),
            "--docker takes a whole GPU node, and cpu-x86 nodes are shared",
        ),
    ],
)
def test_docker_where_it_is_not_offered_or_makes_no_sense_is_refused_with_a_sentence(
    check, sentence
):
    with pytest.raises(InvalidRequest, match=sentence) as raised:
        check()
    assert raised.value.field == "docker"


def test_docker_allowed_on_one_node_without_profiling_is_accepted():
    check_docker_request(True, False)
    check_docker_shape(_type("t4", 4), 4, 1)


def test_a_deployment_allows_no_docker_unless_the_operator_says_so(monkeypatch):
    monkeypatch.delenv("ALLOW_DOCKER", raising=False)
    assert DockerSettings().allow_docker is False
    monkeypatch.setenv("ALLOW_DOCKER", "true")
    assert DockerSettings().allow_docker is True


def _type(name: str, per_node: int) -> Any:
    (found,) = [t for t in _catalogue() if t.gpu_type == name]
    assert found.max_per_node == per_node, "the catalogue migration changed"
    return found


def _pod(docker: bool, preserve: bool = False, profiling: bool = False) -> dict[str, Any]:
    reservation = _reservation("alice", T4, 1, 1, profiling=profiling).model_copy(
        update={"docker": docker, "preserve_entrypoint": preserve, "jupyter_enabled": False}
    )
    placement = Placement(0, "i-0abc", "10.0.0.1", 1, None, False)
    return objects.pod(reservation, T4, placement, IMAGE, None, "", DIND)


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env") or []}


def test_the_docker_pod_has_a_privileged_dind_sidecar_on_a_unix_socket_only():
    spec = _pod(docker=True)["spec"]
    dev, sidecar = spec["containers"]
    assert sidecar["name"] == DOCKER_CONTAINER and sidecar["image"] == DIND
    assert sidecar["securityContext"] == {"privileged": True}
    # one listener, the socket in the shared emptyDir: no TCP port, no TLS certificates.
    # `dockerd` first: given only options, docker:dind's entrypoint adds tcp://0.0.0.0:2375.
    assert sidecar["args"] == ["dockerd", f"--host={DOCKER_HOST}", f"--group={DOCKER_GID}"]
    assert "command" not in sidecar  # the image's entrypoint runs (the dind wrapper)
    assert not [a for a in sidecar["args"] if "tcp://" in a]
    assert "ports" not in sidecar
    probe = sidecar["readinessProbe"]["exec"]["command"]
    assert probe == ["docker", f"--host={DOCKER_HOST}", "version"]
    assert _env(sidecar) == {"DOCKER_TLS_CERTDIR": ""}
    assert sidecar["resources"] == {
        "requests": {"cpu": "100m", "memory": "256Mi", "ephemeral-storage": "1Gi"},
        "limits": {"cpu": "4", "memory": "16Gi", "ephemeral-storage": "51Gi"},
    }
    assert {m["mountPath"]: m["name"] for m in sidecar["volumeMounts"]} == {
        SOCKET_DIR: "docker-socket",
        "/var/lib/docker": "docker-storage",
    }
    # the dev container reaches the socket, and nothing else of the sidecar's
    assert _env(dev)["DOCKER_HOST"] == DOCKER_HOST == f"unix://{SOCKET_DIR}/docker.sock"
    assert _env(dev)["GPU_DEV_DOCKER_GID"] == str(DOCKER_GID)
    mounts = {m["mountPath"]: m for m in dev["volumeMounts"]}
    assert mounts[SOCKET_DIR]["name"] == "docker-socket"
    assert mounts[CLI_DIR] == {"name": "docker-cli", "mountPath": CLI_DIR, "readOnly": True}
    assert "/var/lib/docker" not in mounts
    assert "privileged" not in dev["securityContext"]
    assert spec["securityContext"]["supplementalGroups"] == [DOCKER_GID]


def _storage(pod: dict[str, Any]) -> tuple[int, int, dict[str, str]]:
    """(the emptyDirs on disk, the containers' ephemeral-storage limits) in GiB, and the
    emptyDirs' sizes by name."""
    spec = pod["spec"]
    sizes = {
        v["name"]: v["emptyDir"].get("sizeLimit", "")
        for v in spec["volumes"]
        if "emptyDir" in v and v["emptyDir"].get("medium") != "Memory"
    }
    limits = [c["resources"]["limits"]["ephemeral-storage"] for c in spec["containers"]]
    on_disk = sum(int(size.removesuffix("Gi")) for size in sizes.values() if size.endswith("Gi"))
    return on_disk, sum(int(limit.removesuffix("Gi")) for limit in limits), sizes


def test_dockers_storage_is_half_the_workspace_share_so_the_node_promises_no_more_disk():
    """The node's disk is sized for /workspace and the writable layer per GPU
    (cluster/workspace.py): Docker takes half of the pod's /workspace, never more disk."""
    plain_disk, plain_limits, plain = _storage(_pod(docker=False))
    docker_disk, docker_limits, with_docker = _storage(_pod(docker=True))
    assert plain["workspace"] == "100Gi"
    assert (with_docker["workspace"], with_docker["docker-storage"]) == ("50Gi", "50Gi")
    assert docker_disk == plain_disk  # the same disk (the client's 256Mi aside)
    # the kubelet's pod-wide sum: the dev container's limit shrank by what the sidecar carries
    assert docker_limits == plain_limits + 1  # the sidecar's own writes
    dev = _pod(docker=True)["spec"]["containers"][0]
    assert dev["resources"]["limits"]["ephemeral-storage"] == "70Gi"  # 50 + 20 writable


def test_the_stand_in_prints_the_daemons_listening_line_for_the_sidecar_only():
    dev, sidecar = _pod(docker=True)["spec"]["containers"]
    expected = 'level=info msg="API listen on /run/gpu-dev-docker/docker.sock"'
    assert dockerd_output(sidecar) == expected
    assert dockerd_output(dev) == ""


def test_the_docker_pods_volumes_are_empty_dirs_with_size_limits():
    volumes = {v["name"]: v for v in _pod(docker=True)["spec"]["volumes"]}
    assert volumes["docker-storage"]["emptyDir"] == {"sizeLimit": "50Gi"}
    assert volumes["docker-socket"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "1Mi"}
    assert volumes["docker-cli"]["emptyDir"] == {"sizeLimit": "256Mi"}


def test_the_docker_client_is_copied_in_by_an_unprivileged_init_container():
    init = _pod(docker=True)["spec"]["initContainers"]
    assert [c["name"] for c in init] == ["jupyter-check", CLI_INIT]
    copier = init[-1]
    assert copier["image"] == DIND
    assert copier["volumeMounts"] == [{"name": "docker-cli", "mountPath": CLI_DIR}]
    script = copier["command"][-1]
    assert "cp /usr/local/bin/docker /opt/gpu-dev-docker/bin/" in script
    assert "cp -R /usr/local/libexec/docker/cli-plugins /opt/gpu-dev-docker/" in script
    assert copier["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert copier["securityContext"]["allowPrivilegeEscalation"] is False


def test_the_docker_pod_is_valid_and_an_ordinary_pod_has_none_of_it():
    assert validation.validate("pods", _pod(docker=True)) == []
    spec = _pod(docker=False)["spec"]
    assert [c["name"] for c in spec["containers"]] == ["gpu-dev"]
    assert "DOCKER_HOST" not in _env(spec["containers"][0])
    assert "supplementalGroups" not in spec["securityContext"]
    assert not {"docker-socket", "docker-storage", "docker-cli"} & {
        v["name"] for v in spec["volumes"]
    }


def test_with_the_images_own_entrypoint_the_sidecar_and_docker_host_stay():
    spec = _pod(docker=True, preserve=True)["spec"]
    dev, sidecar = spec["containers"]
    assert "command" not in dev and _env(dev)["DOCKER_HOST"] == DOCKER_HOST
    assert sidecar["name"] == DOCKER_CONTAINER
    assert [c["name"] for c in spec["initContainers"]] == [CLI_INIT]


def test_the_stand_in_refuses_the_docker_pod_in_gpu_dev_and_admits_it_in_gpu_dev_docker():
    pod = _pod(docker=True)
    refused = pod_security.admit_pod(NAMESPACES["gpu-dev"], pod)
    assert refused is not None and refused.code == 403
    assert refused.message == (
        f'pods "{pod["metadata"]["name"]}" is forbidden: violates PodSecurity '
        '"baseline:latest": privileged (container "docker" must not set '
        "securityContext.privileged=true)"
    )
    assert pod_security.admit_pod(NAMESPACES["gpu-dev-docker"], pod) is None


def test_the_docker_namespace_enforces_privileged_and_gpu_dev_keeps_baseline():
    def labels(name: str) -> dict[str, str]:
        return {
            k.removeprefix("pod-security.kubernetes.io/"): v
            for k, v in NAMESPACES[name]["metadata"]["labels"].items()
        }

    assert labels("gpu-dev-docker") == {
        "enforce": "privileged",
        "enforce-version": "latest",
        "warn": "baseline",
        "warn-version": "latest",
        "audit": "baseline",
        "audit-version": "latest",
    }
    assert labels("gpu-dev")["enforce"] == "baseline"
    assert labels("gpu-dev")["warn"] == labels("gpu-dev")["audit"] == "restricted"


def test_the_docker_namespace_has_the_same_network_policies_and_lifecycle_role_as_gpu_dev():
    deploy = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"

    def by_namespace(file: str, kind: str) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for doc in yaml.safe_load_all((deploy / file).read_text()):
            if doc and doc["kind"] == kind:
                meta = doc["metadata"]
                found.setdefault(meta["namespace"], {})[meta["name"]] = {
                    k: v for k, v in doc.items() if k != "metadata"
                }
        return found

    policies = by_namespace("network-policies.yaml", "NetworkPolicy")
    assert policies["gpu-dev-docker"] == policies["gpu-dev"]
    assert len(policies["gpu-dev-docker"]) == 4
    roles = by_namespace("rbac.yaml", "Role")
    assert roles["gpu-dev-docker"] == roles["gpu-dev"]
    bindings = by_namespace("rbac.yaml", "RoleBinding")
    assert bindings["gpu-dev-docker"] == bindings["gpu-dev"]


def test_a_docker_reservations_objects_live_in_the_docker_namespace():
    settings = ClusterSettings(eks_cluster_name="c")  # type: ignore[call-arg]
    lc = Lifecycle(
        None,  # type: ignore[arg-type]
        None,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        settings.kubernetes_namespace,
        settings.kubernetes_profiling_namespace,
        docker_namespace=settings.kubernetes_docker_namespace,
    )
    reservation = _reservation("alice", T4, 1, 1)
    assert lc.namespace_of(reservation) == "gpu-dev"
    assert lc.namespace_of(reservation.model_copy(update={"docker": True})) == "gpu-dev-docker"
    assert lc.namespaces == ("gpu-dev", "gpu-dev-profiling", "gpu-dev-docker")
    assert set(lc.namespaces) <= set(NAMESPACES)


def test_reserve_sends_docker(monkeypatch):
    sent: list[Any] = []

    class Client:
        def request(self, method: str, url: str, body: object = None) -> dict[str, object]:
            sent.append(body)
            return {"reservation_id": "5f0c1a2b-0000-4000-8000-000000000000", "status": "pending"}

    monkeypatch.setattr(context.Context, "client", lambda self: Client())
    monkeypatch.setattr(context.Context, "emit", lambda self, data, render: None)
    args = ["reserve", "-t", "t4", "-g", "1", "-h", "1", "--disk", "none", "--no-wait"]
    CliRunner().invoke(cli, [*args, "--docker"])
    CliRunner().invoke(cli, args)
    flags = [b["docker"] for b in sent if isinstance(b, dict) and "gpu_type" in b]
    assert flags == [True, False]


def test_show_says_docker_is_on(capsys):
    reservation = {
        "reservation_id": "5f0c1a2b-0000-4000-8000-000000000000",
        "name": None,
        "status": "pending",
        "gpu_type": "t4",
        "gpu_count": 1,
        "total_nodes": 1,
        "duration_hours": 1.0,
        "created_at": "2026-11-24T00:01:00+00:00",
        "jupyter_enabled": False,
        "disk_name": None,
        "docker": True,
    }
    render.reservation_panel(reservation)
    assert "Docker:  on (DOCKER_HOST in SSH sessions" in capsys.readouterr().out
