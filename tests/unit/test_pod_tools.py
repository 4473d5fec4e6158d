"""The deployment's tools in the dev pod (gpudev/cluster/pod_tools.py): with a tools image,
an init container copies them into a shared emptyDir before the Jupyter check, and both that
check and the dev container run the scripts with the tools' bash, so an image without bash,
sshd or sudo starts; the pod still passes Pod Security baseline. Without one, the pod is as
it was."""

from __future__ import annotations

from typing import Any

from gpudev.cluster import objects
from gpudev.cluster.names import Placement
from gpudev.cluster.pod_tools import TOOLS_BASH, TOOLS_DIR, TOOLS_INIT, TOOLS_VOLUME
from localcloud.kubernetes import pod_security, validation
from tests.unit.test_manifest_drift import _catalogue, _reservation

T4 = next(t for t in _catalogue() if t.gpu_type == "t4")
TOOLS = "123456789012.dkr.ecr.us-east-2.amazonaws.com/gpu-dev-tools:1"


def _pod(tools_image: str = "", rank: int = 0) -> dict[str, Any]:
    reservation = _reservation("alice", T4, 1, 1)
    placement = Placement(rank, "i-0abc", "10.0.0.1", 1, None, False)
    return objects.pod(reservation, T4, placement, "debian:12", None, tools_image)


def test_the_tools_are_copied_first_and_every_script_runs_with_their_bash():
    spec = _pod(TOOLS)["spec"]
    tools, check = spec["initContainers"]
    assert tools["name"] == TOOLS_INIT and tools["image"] == TOOLS
    assert tools["command"][-2:] == ["/gpu-dev/.", f"{TOOLS_DIR}/"]
    assert check["name"] == objects.JUPYTER_CHECK and check["image"] == "debian:12"
    (dev,) = spec["containers"]
    for container in (check, dev):
        assert container["command"][0] == TOOLS_BASH
        assert {"name": TOOLS_VOLUME, "mountPath": TOOLS_DIR, "readOnly": True} in container[
            "volumeMounts"
        ]
        assert {"name": "GPU_DEV_TOOLS", "value": TOOLS_DIR} in container["env"]
    assert {"name": TOOLS_VOLUME, "emptyDir": {"sizeLimit": "512Mi"}} in spec["volumes"]
    assert dev["securityContext"]["runAsUser"] == 0  # whatever USER the image declares


def test_a_pod_on_another_node_gets_the_tools_without_a_jupyter_check():
    (tools,) = _pod(TOOLS, rank=1)["spec"]["initContainers"]
    assert tools["name"] == TOOLS_INIT


def test_a_pod_with_the_tools_passes_pod_security_baseline_and_validation():
    pod = _pod(TOOLS)
    assert pod_security.violations(pod) == []
    assert validation.validate("pods", pod) == []


def test_without_a_tools_image_the_pod_is_as_before():
    spec = _pod()["spec"]
    assert [c["name"] for c in spec["initContainers"]] == [objects.JUPYTER_CHECK]
    assert spec["containers"][0]["command"][0] == "/bin/bash"
    assert TOOLS_VOLUME not in [v["name"] for v in spec["volumes"]]
