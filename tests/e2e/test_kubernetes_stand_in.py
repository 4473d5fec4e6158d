"""The official Kubernetes client, configured as our Lambdas configure it (EKS describe +
STS-presigned token), against the stand-in and its simulated cluster."""

from __future__ import annotations

import contextlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from localcloud.kubernetes import init_containers
from localcloud.stack import LocalCloud
from tests.support.waiting import wait_for

NAMESPACE = "gpu-dev"


def _pod(name: str, gpus: int, gpu_type: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "nodeSelector": {"GpuType": gpu_type},
            "containers": [
                {
                    "name": "gpu-dev",
                    "image": "pytorch/pytorch:latest",
                    "resources": {
                        "requests": {"nvidia.com/gpu": str(gpus)},
                        "limits": {"nvidia.com/gpu": str(gpus)},
                    },
                }
            ],
        },
    }


def test_nodes_follow_the_seeded_auto_scaling_groups(core: client.CoreV1Api):
    nodes = wait_for(
        lambda: (n := core.list_node().items) and len(n) == 5 and n,
        message="5 nodes from 2 t4 + 2 h100 + 1 cpu-x86",
    )
    by_type: dict[str, list[str]] = {}
    for node in nodes:
        labels = node.metadata.labels
        by_type.setdefault(labels["GpuType"], []).append(node.status.allocatable["nvidia.com/gpu"])
        assert node.metadata.name.startswith("i-")
        assert labels["topology.kubernetes.io/zone"].startswith("us-east-2")
    assert by_type == {"t4": ["4", "4"], "h100": ["8", "8"], "cpu-x86": ["0"]}

    # GPU node groups in public subnets, the CPU one private: both address paths exist. The
    # h100 (EFA) nodes have a public address only once the availability updater's schedule
    # has associated an Elastic IP (docs/multinode.md).
    def external_kinds(gpu_type: str) -> list[set[str]]:
        return [
            {a.type for a in n.status.addresses} & {"ExternalIP", "ExternalDNS"}
            for n in core.list_node(label_selector=f"GpuType={gpu_type}").items
        ]

    for node in nodes:
        kinds = {a.type for a in node.status.addresses}
        assert {"InternalIP", "InternalDNS", "Hostname"} <= kinds
    assert external_kinds("t4") == [{"ExternalIP", "ExternalDNS"}] * 2
    assert external_kinds("cpu-x86") == [set()]
    wait_for(
        lambda: external_kinds("h100") == [{"ExternalIP", "ExternalDNS"}] * 2,
        timeout=60,
        message="the h100 nodes' Elastic IPs",
    )
    h100 = core.list_node(label_selector="GpuType=h100").items
    assert {n.metadata.labels["node.kubernetes.io/instance-type"] for n in h100} == {"p5.48xlarge"}


def test_changing_desired_capacity_adds_a_node(core: client.CoreV1Api, local_cloud: LocalCloud):
    autoscaling = local_cloud.aws.client("autoscaling")  # type: ignore[union-attr]
    autoscaling.set_desired_capacity(
        AutoScalingGroupName="pytorch-gpu-dev-gpu-nodes-t4", DesiredCapacity=3
    )
    try:
        wait_for(
            lambda: len(core.list_node(label_selector="GpuType=t4").items) == 3,
            message="third t4 node",
        )
    finally:
        autoscaling.set_desired_capacity(
            AutoScalingGroupName="pytorch-gpu-dev-gpu-nodes-t4", DesiredCapacity=2
        )
    wait_for(
        lambda: len(core.list_node(label_selector="GpuType=t4").items) == 2,
        message="back to two t4 nodes",
    )


def test_a_four_gpu_pod_is_bound_then_running_and_an_oversized_one_stays_pending(
    core: client.CoreV1Api,
):
    run = uuid.uuid4().hex[:6]
    core.create_namespaced_pod(NAMESPACE, _pod(f"fits-{run}", 4, "h100", {"run": run}))
    core.create_namespaced_pod(NAMESPACE, _pod(f"too-big-{run}", 16, "h100", {"run": run}))
    running = wait_for(
        lambda: (
            (p := core.read_namespaced_pod(f"fits-{run}", NAMESPACE)).status.phase == "Running"
            and p
        ),
        message="4-GPU pod running",
    )
    assert running.spec.node_name.startswith("i-")
    assert running.status.container_statuses[0].ready
    pending = wait_for(
        lambda: (
            (p := core.read_namespaced_pod(f"too-big-{run}", NAMESPACE)).status.conditions and p
        ),
        message="FailedScheduling condition",
    )
    assert pending.status.phase == "Pending"
    assert pending.status.conditions[0].reason == "Unschedulable"
    on_node = core.list_namespaced_pod(
        NAMESPACE, field_selector=f"spec.nodeName={running.spec.node_name}"
    ).items
    assert f"fits-{run}" in [p.metadata.name for p in on_node]
    phases = core.list_namespaced_pod(
        NAMESPACE, label_selector=f"run={run}", field_selector="status.phase=Pending"
    ).items
    assert [p.metadata.name for p in phases] == [f"too-big-{run}"]
    core.delete_collection_namespaced_pod(NAMESPACE, label_selector=f"run={run}")
    # The unbound pod goes at once; the running one terminates for its grace period.
    terminating = core.list_namespaced_pod(NAMESPACE, label_selector=f"run={run}").items
    assert [p.metadata.name for p in terminating] == [f"fits-{run}"]
    assert terminating[0].metadata.deletion_timestamp is not None
    wait_for(
        lambda: core.list_namespaced_pod(NAMESPACE, label_selector=f"run={run}").items == [],
        message="the running pod deleted after its grace period",
    )


def test_node_port_services_get_distinct_ports_in_range(core: client.CoreV1Api):
    run = uuid.uuid4().hex[:6]
    ports = []
    for index in range(2):
        service = core.create_namespaced_service(
            NAMESPACE,
            {
                "metadata": {"name": f"ssh-{run}-{index}", "labels": {"run": run}},
                "spec": {
                    "type": "NodePort",
                    "selector": {"run": run},
                    "ports": [{"name": "ssh", "port": 22}],
                },
            },
        )
        ports.append(service.spec.ports[0].node_port)
        assert service.spec.cluster_ip.startswith("10.100.")
    assert len(set(ports)) == 2 and all(30000 <= p <= 32767 for p in ports)
    with pytest.raises(ApiException) as clash:
        core.create_namespaced_service(
            NAMESPACE,
            {
                "metadata": {"name": f"clash-{run}"},
                "spec": {"type": "NodePort", "ports": [{"port": 22, "nodePort": ports[0]}]},
            },
        )
    assert clash.value.status == 422
    headless = core.create_namespaced_service(
        NAMESPACE,
        {
            "metadata": {"name": f"headless-{run}"},
            "spec": {"clusterIP": "None", "ports": [{"port": 29500}]},
        },
    )
    assert headless.spec.cluster_ip == "None"


def test_selectors_config_maps_status_and_errors_behave_like_the_api_server(
    core: client.CoreV1Api,
):
    run = uuid.uuid4().hex[:6]
    for index, tier in enumerate(["a", "b", "a"]):
        core.create_namespaced_config_map(
            NAMESPACE,
            {
                "metadata": {"name": f"cm-{run}-{index}", "labels": {"run": run, "tier": tier}},
                "data": {"warning": ""},
            },
        )
    selected = core.list_namespaced_config_map(NAMESPACE, label_selector=f"run={run},tier in (a)")
    assert len(selected.items) == 2
    assert (
        len(core.list_namespaced_config_map(NAMESPACE, label_selector=f"run={run},tier!=a").items)
        == 1
    )
    patched = core.patch_namespaced_config_map(
        f"cm-{run}-0", NAMESPACE, {"data": {"warning": "30 minutes left"}}
    )
    assert patched.data["warning"] == "30 minutes left"
    with pytest.raises(ApiException) as exists:
        core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": f"cm-{run}-0"}})
    assert exists.value.status == 409
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_secret(f"nope-{run}", NAMESPACE)
    assert missing.value.status == 404
    with pytest.raises(ApiException) as bad_field:
        core.list_namespaced_config_map(NAMESPACE, field_selector="data.warning=x")
    assert bad_field.value.status == 400


def test_a_delete_with_preconditions_is_refused_once_the_object_changed(
    core: client.CoreV1Api,
):
    """As kube-apiserver: a UID or resourceVersion that no longer matches is a 409 and
    nothing is deleted (the sweeper deletes only what it listed)."""
    name = f"pre-{uuid.uuid4().hex[:6]}"
    listed = core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": name}})
    core.patch_namespaced_config_map(name, NAMESPACE, {"data": {"a": "b"}})
    for preconditions in (
        client.V1Preconditions(resource_version=listed.metadata.resource_version),
        client.V1Preconditions(uid=str(uuid.uuid4())),
    ):
        with pytest.raises(ApiException) as changed:
            core.delete_namespaced_config_map(
                name, NAMESPACE, body=client.V1DeleteOptions(preconditions=preconditions)
            )
        assert changed.value.status == 409 and "Precondition failed" in changed.value.body
    current = core.read_namespaced_config_map(name, NAMESPACE)
    core.delete_namespaced_config_map(
        name,
        NAMESPACE,
        body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(
                uid=current.metadata.uid, resource_version=current.metadata.resource_version
            )
        ),
    )
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_config_map(name, NAMESPACE)
    assert gone.value.status == 404


def test_status_is_a_subresource(core: client.CoreV1Api):
    name = f"status-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(NAMESPACE, _pod(name, 0, "cpu-x86", {}))
    # A spec write cannot change status ...
    core.patch_namespaced_pod(
        name, NAMESPACE, {"status": {"phase": "Failed"}, "metadata": {"labels": {"x": "y"}}}
    )
    pod = core.read_namespaced_pod(name, NAMESPACE)
    assert pod.status.phase != "Failed" and pod.metadata.labels == {"x": "y"}
    # ... a status write cannot change spec.
    core.patch_namespaced_pod_status(
        name, NAMESPACE, {"status": {"message": "hello"}, "spec": {"nodeName": "elsewhere"}}
    )
    pod = core.read_namespaced_pod(name, NAMESPACE)
    assert pod.status.message == "hello" and pod.spec.node_name != "elsewhere"
    assert pod.metadata.uid and pod.metadata.resource_version and pod.metadata.creation_timestamp
    core.delete_namespaced_pod(name, NAMESPACE)


def test_injected_create_failures_surface_as_500(core: client.CoreV1Api, local_cloud: LocalCloud):
    local_cloud.kubernetes.faults.fail_next("create", "pods", 1)  # type: ignore[union-attr]
    name = f"flaky-{uuid.uuid4().hex[:6]}"
    with pytest.raises(ApiException) as failed:
        core.create_namespaced_pod(NAMESPACE, _pod(name, 0, "cpu-x86", {}))
    assert failed.value.status == 500
    core.create_namespaced_pod(NAMESPACE, _pod(name, 0, "cpu-x86", {}))  # the next one works
    core.delete_namespaced_pod(name, NAMESPACE)


def test_requests_without_a_valid_eks_token_are_unauthorized(
    local_cloud: LocalCloud, tmp_path: Path
):
    assert local_cloud.kubernetes_certificate is not None
    ca = tmp_path / "ca.pem"
    ca.write_bytes(local_cloud.kubernetes_certificate.ca_pem)
    configuration = client.Configuration()
    configuration.host = local_cloud.kubernetes.url  # type: ignore[union-attr]
    configuration.ssl_ca_cert = str(ca)
    configuration.api_key = {"authorization": "k8s-aws-v1.bm90LWEtdG9rZW4"}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    with client.ApiClient(configuration) as api_client, pytest.raises(ApiException) as denied:
        client.CoreV1Api(api_client).list_node()
    assert denied.value.status == 401


def test_pods_by_node_come_from_the_index_and_match_a_full_scan(core: client.CoreV1Api):
    run = uuid.uuid4().hex[:6]
    core.create_namespaced_pod(NAMESPACE, _pod(f"indexed-{run}", 1, "t4", {"run": run}))
    node = wait_for(
        lambda: core.read_namespaced_pod(f"indexed-{run}", NAMESPACE).spec.node_name,
        message="bound",
    )
    by_index = {
        p.metadata.name
        for p in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
    }
    by_scan = {
        p.metadata.name
        for p in core.list_pod_for_all_namespaces().items
        if p.spec.node_name == node
    }
    assert f"indexed-{run}" in by_index and by_index == by_scan
    core.delete_namespaced_pod(f"indexed-{run}", NAMESPACE, grace_period_seconds=0)
    assert f"indexed-{run}" not in {
        p.metadata.name
        for p in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items
    }


def test_list_items_carry_no_kind_or_api_version_as_in_kube_apiserver(
    core: client.CoreV1Api,
):
    """A listed object written back needs its kind set by whoever writes it: the real API
    server omits `kind`/`apiVersion` from a list's items (the list carries them)."""
    import json

    response = core.list_node(_preload_content=False)
    listed = json.loads(response.data)
    assert listed["kind"] == "NodeList" and listed["apiVersion"] == "v1"
    assert listed["items"], "the seeded cluster has nodes"
    assert all("kind" not in n and "apiVersion" not in n for n in listed["items"])
    single = json.loads(
        core.read_node(listed["items"][0]["metadata"]["name"], _preload_content=False).data
    )
    assert (single["kind"], single["apiVersion"]) == ("Node", "v1")


def test_init_containers_run_before_the_pod_is_ready_and_report_through_their_status(
    core: client.CoreV1Api, local_cloud: LocalCloud
):
    """Our pod's Jupyter check as its init container, through the official client: the pod is
    never Running before the check completed, then its status carries the check's verdict
    (the image's content is the boundary: `jupyter_images`). A name shared with a container
    is refused as kube-apiserver does."""
    from gpudev.cluster.objects import SSH_READINESS_PROBE, jupyter_check

    run = uuid.uuid4().hex[:6]
    assert local_cloud.cluster is not None
    local_cloud.cluster.kubelet.jupyter_images = frozenset({"gpu-dev:with-jupyter"})
    names: dict[str, str] = {}
    try:
        for image in ("gpu-dev:with-jupyter", "pytorch/pytorch:latest"):
            pod = _pod(f"init-{run}-{len(names)}", 0, "cpu-x86", {"run": run})
            pod["spec"]["initContainers"] = [jupyter_check(image, {"PATH": "/usr/bin"})]
            pod["spec"]["containers"][0] |= {
                "image": image,
                "ports": [{"name": "ssh", "containerPort": 22}],
                "readinessProbe": SSH_READINESS_PROBE,
            }
            names[image] = core.create_namespaced_pod(NAMESPACE, pod).metadata.name
        seen: list[Any] = []

        def ready() -> bool:
            pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"run={run}").items
            seen.extend(pods)
            return len(pods) == 2 and all(
                any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
                for p in pods
            )

        wait_for(ready, message="both pods Ready")
        for pod in seen:  # every observation: Running only once the init container completed
            inits = pod.status.init_container_statuses or []
            if pod.status.phase == "Running":
                assert inits and inits[0].state.terminated.reason == "Completed"
            else:
                assert pod.status.phase == "Pending"
        verdicts = {}
        for image, name in names.items():
            (check,) = core.read_namespaced_pod(name, NAMESPACE).status.init_container_statuses
            terminated = check.state.terminated
            assert (check.name, terminated.exit_code, terminated.reason) == (
                "jupyter-check",
                0,
                "Completed",
            )
            verdicts[image] = terminated.message
        assert verdicts["gpu-dev:with-jupyter"] == "jupyter=available\n"
        # the stand-in's PATH is the directory of the image's commands, not the manifest's
        assert verdicts["pytorch/pytorch:latest"].startswith(
            "jupyter=unavailable: no jupyter-lab on PATH ("
        )
    finally:
        local_cloud.cluster.kubelet.jupyter_images = frozenset()
        for name in names.values():
            core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)

    clash = _pod(f"init-clash-{run}", 0, "cpu-x86", {"run": f"{run}-c"})
    clash["spec"]["initContainers"] = [{"name": "gpu-dev", "image": "x"}]
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod(NAMESPACE, clash)
    assert refused.value.status == 422
    cause = json.loads(refused.value.body)["details"]["causes"][0]
    assert (cause["field"], cause["message"]) == (
        "spec.initContainers[0].name",
        'Duplicate value: "gpu-dev"',
    )


def test_a_failing_init_container_crash_loops_or_fails_the_pod_by_its_restart_policy(
    core: client.CoreV1Api, local_cloud: LocalCloud
):
    """As the kubelet: with restartPolicy Always (the default) or OnFailure the init container
    is restarted with a back-off, the pod Pending in Init:CrashLoopBackOff; with Never the pod
    is Failed. Our pod's Jupyter check in an image with no shell cannot start: the control
    plane's readiness check reads that as final, with the container's own words."""
    from gpudev.cluster.objects import jupyter_check
    from gpudev.cluster.pod_readiness import pods_state

    run = uuid.uuid4().hex[:6]
    assert local_cloud.cluster is not None
    local_cloud.cluster.kubelet.trusted_scripts |= {"exit 4"}  # the stand-in runs only our scripts
    local_cloud.cluster.kubelet.shell_less_images = frozenset({"distroless:1"})
    names = {
        policy: f"init-fails-{policy.lower()}-{run}" for policy in ("Always", "Never", "OnFailure")
    }
    try:
        for policy, name in names.items():
            pod = _pod(name, 0, "cpu-x86", {"run": run})
            pod["spec"]["restartPolicy"] = policy
            pod["spec"]["initContainers"] = [
                {"name": "check", "image": "x", "command": ["/bin/sh", "-c", "exit 4"]}
                if policy != "OnFailure"
                else jupyter_check("distroless:1", {"PATH": "/usr/bin"})
            ]
            core.create_namespaced_pod(NAMESPACE, pod)

        def read(policy: str) -> Any:
            return json.loads(
                core.read_namespaced_pod(names[policy], NAMESPACE, _preload_content=False).data
            )

        def crash_looping(policy: str, restarts: int) -> Any:
            pod = read(policy)
            (check,) = pod["status"].get("initContainerStatuses") or [{}]
            waiting = (check.get("state") or {}).get("waiting") or {}
            looping = waiting.get("reason") == "CrashLoopBackOff"
            return looping and check["restartCount"] >= restarts and pod

        looping = wait_for(lambda: crash_looping("Always", 2), message="restarted twice")
        (check,) = looping["status"]["initContainerStatuses"]
        assert check["lastState"]["terminated"]["exitCode"] == 4
        assert check["state"]["waiting"]["message"].startswith("back-off ")
        assert looping["status"]["phase"] == "Pending"
        assert looping["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == (
            "PodInitializing"
        )

        failed = wait_for(
            lambda: (pod := read("Never"))["status"]["phase"] == "Failed" and pod,
            message="the Never pod failed",
        )
        (check,) = failed["status"]["initContainerStatuses"]
        assert check["state"]["terminated"]["exitCode"] == 4 and check["restartCount"] == 0

        no_shell = wait_for(lambda: crash_looping("OnFailure", 1), message="no shell: looping")
        (check,) = no_shell["status"]["initContainerStatuses"]
        assert check["lastState"]["terminated"]["reason"] == "StartError"
        state = pods_state([no_shell], 1)
        assert state.failed and state.problem is not None
        assert state.problem.startswith(
            "init container jupyter-check keeps failing (CrashLoopBackOff, restarted "
        )
        assert 'exec: "/bin/bash": stat /bin/bash: no such file or directory' in state.problem
    finally:
        local_cloud.cluster.kubelet.trusted_scripts = init_containers.SHIPPED_SCRIPTS
        local_cloud.cluster.kubelet.shell_less_images = frozenset()
        for name in names.values():
            core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)


def test_a_crashing_container_crash_loops_or_fails_the_pod_by_its_restart_policy(
    core: client.CoreV1Api, local_cloud: LocalCloud
):
    """As the kubelet: a container that exits is restarted (OnFailure, Always) at once, then
    with a growing back-off, waiting in CrashLoopBackOff with its last run in `lastState`,
    the pod Running and never Ready; with Never the pod is Failed. Our readiness check reads
    the crash loop as final, with the container's own words."""
    from gpudev.cluster.pod_readiness import pods_state
    from gpudev.cluster.vocabulary import STARTUP_FAILED
    from localcloud.kubernetes.container_restarts import Crash

    run = uuid.uuid4().hex[:6]
    assert local_cloud.cluster is not None
    kubelet = local_cloud.cluster.kubelet
    kubelet.crashing_images = {"no-sshd:1": Crash(1, message=f"{STARTUP_FAILED}no sshd\n")}
    names = {policy: f"crash-{policy.lower()}-{run}" for policy in ("OnFailure", "Never")}
    try:
        for policy, name in names.items():
            pod = _pod(name, 0, "cpu-x86", {"run": run})
            pod["spec"]["restartPolicy"] = policy
            (container,) = pod["spec"]["containers"]
            container |= {
                "image": "no-sshd:1",
                "command": ["/bin/bash", "-c", "startup"],
                "ports": [{"name": "ssh", "containerPort": 22}],
                "readinessProbe": {"tcpSocket": {"port": "ssh"}},
            }
            core.create_namespaced_pod(NAMESPACE, pod)
        seen: list[Any] = []

        def read(policy: str) -> Any:
            pod = json.loads(
                core.read_namespaced_pod(names[policy], NAMESPACE, _preload_content=False).data
            )
            seen.append(pod)
            return pod

        def crash_looping(restarts: int) -> Any:
            pod = read("OnFailure")
            (dev,) = pod["status"].get("containerStatuses") or [{}]
            waiting = (dev.get("state") or {}).get("waiting") or {}
            return (
                waiting.get("reason") == "CrashLoopBackOff"
                and dev["restartCount"] >= restarts
                and pod
            )

        looping = wait_for(lambda: crash_looping(2), message="restarted twice, backing off")
        (dev,) = looping["status"]["containerStatuses"]
        uid = looping["metadata"]["uid"]
        waiting = dev["state"]["waiting"]
        assert waiting["message"].startswith("back-off ")
        assert waiting["message"].endswith(
            f" restarting failed container=gpu-dev pod={names['OnFailure']}_{NAMESPACE}({uid})"
        )
        last = dev["lastState"]["terminated"]
        assert (last["exitCode"], last["reason"], last["message"]) == (
            1,
            "Error",
            f"{STARTUP_FAILED}no sshd\n",
        )
        assert last["startedAt"] and last["finishedAt"]
        assert (dev["ready"], dev["started"]) == (False, False)
        assert looping["status"]["phase"] == "Running"
        ready = next(c for c in looping["status"]["conditions"] if c["type"] == "Ready")
        assert (ready["status"], ready["reason"]) == ("False", "ContainersNotReady")
        state = pods_state([looping], 1)
        assert state.failed and state.problem is not None
        assert state.problem.startswith("container gpu-dev keeps crashing (CrashLoopBackOff, ")
        assert state.problem.endswith(f"; last exit 1: {STARTUP_FAILED}no sshd)")

        failed = wait_for(
            lambda: (pod := read("Never"))["status"]["phase"] == "Failed" and pod,
            message="the Never pod failed",
        )
        (dev,) = failed["status"]["containerStatuses"]
        assert dev["state"]["terminated"]["exitCode"] == 1 and dev["restartCount"] == 0
        # every observation: the probe never passed for a container that kept crashing
        assert not [
            p
            for p in seen
            if any(
                c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"]
            )
        ]
    finally:
        kubelet.crashing_images = {}
        for name in names.values():
            core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)


def test_a_deleted_pods_waiting_container_is_terminated_as_status_unknown(
    core: client.CoreV1Api, local_cloud: LocalCloud
):
    """As the kubelet's TerminatePod: a container that is not running when its pod is
    deleted (waiting in CrashLoopBackOff; no preStop hook runs) is written terminated,
    ContainerStatusUnknown, exit 137, with the kubelet's words, its last run kept in
    `lastState`; a finalizer keeps the pod so that status can be read."""
    from localcloud.kubernetes.container_restarts import Crash

    assert local_cloud.cluster is not None
    kubelet = local_cloud.cluster.kubelet
    kubelet.crashing_images = {"crashes:1": Crash(1, message="no sshd\n")}
    name = f"crash-deleted-{uuid.uuid4().hex[:6]}"
    pod = _pod(name, 0, "cpu-x86", {"run": name})
    pod["metadata"]["finalizers"] = ["gpu-dev.pytorch.org/home-listing"]
    pod["spec"]["restartPolicy"] = "OnFailure"
    (container,) = pod["spec"]["containers"]
    container |= {
        "image": "crashes:1",
        "command": ["/bin/bash", "-c", "startup"],
        "lifecycle": {"preStop": {"exec": {"command": ["/bin/sh", "-c", "true"]}}},
    }
    try:
        core.create_namespaced_pod(NAMESPACE, pod)

        def status() -> Any:
            read = core.read_namespaced_pod(name, NAMESPACE, _preload_content=False).data
            return json.loads(read)["status"]

        wait_for(
            lambda: any(
                ((s.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff"
                for s in status().get("containerStatuses") or []
            ),
            message="waiting in CrashLoopBackOff",
        )
        core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=1)
        stopped = wait_for(
            lambda: (s := status())["phase"] == "Failed" and s, message="stopped, kept"
        )
        (dev,) = stopped["containerStatuses"]
        assert dev["state"]["terminated"] == {
            "exitCode": 137,
            "reason": "ContainerStatusUnknown",
            "message": "The container could not be located when the pod was terminated",
        }
        assert dev["lastState"]["terminated"]["message"] == "no sshd\n"
        assert (dev["ready"], dev["started"]) == (False, False)
    finally:
        kubelet.crashing_images = {}
        core.patch_namespaced_pod(name, NAMESPACE, {"metadata": {"finalizers": []}})
        with contextlib.suppress(ApiException):  # gone once its finalizer went, if deleted
            core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)


def test_a_pod_writing_past_its_local_storage_limits_is_evicted_as_the_kubelet_does(
    core: client.CoreV1Api, local_cloud: LocalCloud
):
    """An emptyDir past its sizeLimit evicts its pod (Failed, Evicted, the kubelet's message);
    a neighbour on the same node keeps running (docs/architecture.md, Isolation)."""
    run = uuid.uuid4().hex[:6]
    assert local_cloud.cluster is not None
    kubelet = local_cloud.cluster.kubelet
    names = [f"disk-{n}-{run}" for n in ("full", "quiet")]
    for name in names:
        pod = _pod(name, 0, "cpu-x86", {"run": run})
        (container,) = pod["spec"]["containers"]
        container["resources"] = {
            "requests": {"ephemeral-storage": "1Gi"},
            "limits": {"ephemeral-storage": "30Gi"},
        }
        container["volumeMounts"] = [{"name": "workspace", "mountPath": "/workspace"}]
        pod["spec"]["volumes"] = [{"name": "workspace", "emptyDir": {"sizeLimit": "10Gi"}}]
        core.create_namespaced_pod(NAMESPACE, pod)
    try:

        def phases() -> list[str]:
            return [core.read_namespaced_pod(name, NAMESPACE).status.phase for name in names]

        wait_for(lambda: phases() == ["Running", "Running"], 20, "both pods running")
        full = core.read_namespaced_pod(names[0], NAMESPACE)
        kubelet.local_storage.write(full.metadata.uid, "volume:workspace", 10 * 2**30 + 1)
        wait_for(lambda: phases()[0] == "Failed", 20, "the full pod evicted")
        evicted = core.read_namespaced_pod(names[0], NAMESPACE)
        assert (evicted.status.reason, evicted.status.message) == (
            "Evicted",
            'Usage of EmptyDir volume "workspace" exceeds the limit "10Gi". ',
        )
        assert core.read_namespaced_pod(names[1], NAMESPACE).status.phase == "Running"
    finally:
        for name in names:
            core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)


PROFILING = "gpu-dev.pytorch.org/profiling"


def test_taints_and_node_selectors_are_honoured_as_the_scheduler_and_the_kubelet_do(
    core: client.CoreV1Api,
):
    """The scheduler keeps a pod off nodes whose NoSchedule/NoExecute taints it does not
    tolerate. A pod bound by nodeName skips the scheduler: the kubelet still refuses it for
    a nodeSelector its node does not match or an untolerated NoExecute taint, and runs it
    despite a NoSchedule one (Kubernetes 1.22 on)."""
    run = uuid.uuid4().hex[:6]
    t4 = sorted(n.metadata.name for n in core.list_node(label_selector="GpuType=t4").items)
    taint = {"key": PROFILING, "value": "true", "effect": "NoSchedule"}

    def pod(name: str, **spec: Any) -> dict[str, Any]:
        manifest = _pod(f"{name}-{run}", 1, "t4", {"run": run})
        manifest["spec"] |= spec
        core.create_namespaced_pod(NAMESPACE, manifest)
        return manifest

    def settled(name: str, phase: str) -> Any:
        """The pod once in `phase` (Pending: once the scheduler said why)."""
        return wait_for(
            lambda: (
                (
                    (p := core.read_namespaced_pod(f"{name}-{run}", NAMESPACE)).status.phase
                    == phase
                    and (phase != "Pending" or p.status.conditions)
                )
                and p
            ),
            message=f"{name} {phase}",
        )

    try:
        for name in t4:
            core.patch_node(
                name, {"metadata": {"labels": {PROFILING: "true"}}, "spec": {"taints": [taint]}}
            )
        pod("plain")
        pod("tolerant", tolerations=[{"key": PROFILING, "operator": "Equal", "value": "true"}])
        assert settled("tolerant", "Running").spec.node_name in t4
        plain = settled("plain", "Pending")
        assert plain.spec.node_name is None
        assert plain.status.conditions[0].reason == "Unschedulable"

        core.patch_node(t4[0], {"spec": {"taints": [{**taint, "effect": "NoExecute"}]}})
        pod("no-execute", nodeName=t4[0])
        pod("elsewhere", nodeName=t4[1], nodeSelector={"GpuType": "h100"})
        pod("despite", nodeName=t4[1])
        refused = settled("no-execute", "Failed")
        assert refused.status.reason == "TaintToleration"
        assert f"untolerated taint {{{PROFILING}: true}}" in refused.status.message
        assert settled("elsewhere", "Failed").status.reason == "NodeAffinity"
        assert settled("despite", "Running").spec.node_name == t4[1]
    finally:
        for name in t4:
            core.patch_node(
                name, {"metadata": {"labels": {PROFILING: None}}, "spec": {"taints": None}}
            )
        core.delete_collection_namespaced_pod(
            NAMESPACE, label_selector=f"run={run}", grace_period_seconds=0
        )
    assert all(
        not n.spec.taints and PROFILING not in n.metadata.labels
        for n in core.list_node(label_selector="GpuType=t4").items
    )
