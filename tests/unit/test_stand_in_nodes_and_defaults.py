"""What `kubectl get -o wide` and `-o yaml` read on EKS, on the stand-in: a node's nodeInfo
(an EKS AL2023 node's kubelet, containerd, kernel and ids), its four conditions whose
lastHeartbeatTime the kubelet advances (localcloud/kubernetes/nodes.py); the defaults
kube-apiserver writes into pods and Services (object_defaults.py), kept on an update that
leaves them out; a running pod's podIPs and hostIPs beside podIP and hostIP."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from localcloud.kubernetes.nodes import heartbeat, node_object
from localcloud.kubernetes.store import ObjectStore
from localcloud.kubernetes.timestamps import format_time
from tests.support.stand_in_cluster import NS, SHAPE, ZONE, cluster, pod, run_until


def test_a_node_reports_the_software_and_ids_of_an_eks_al2023_node():
    info = node_object("i-0abc", ZONE, SHAPE)["status"]["nodeInfo"]
    assert re.fullmatch(r"v1\.33\.\d+-eks-[0-9a-f]{7}", info["kubeletVersion"])
    assert info["containerRuntimeVersion"].startswith("containerd://")
    assert info["osImage"].startswith("Amazon Linux 2023")
    assert info["kernelVersion"].endswith(".amzn2023.x86_64")
    assert (info["architecture"], info["operatingSystem"]) == ("amd64", "linux")
    assert re.fullmatch(r"[0-9a-f]{32}", info["machineID"])
    assert re.fullmatch(
        r"ec2[0-9a-f]{5}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", info["systemUUID"]
    )
    assert re.fullmatch(r"[0-9a-f-]{36}", info["bootID"])
    assert node_object("i-0abc", ZONE, SHAPE)["status"]["nodeInfo"] == info  # deterministic
    assert (
        node_object("i-0def", ZONE, SHAPE)["status"]["nodeInfo"]["machineID"] != info["machineID"]
    )


def test_a_node_has_the_kubelets_four_conditions_and_its_addresses():
    status = node_object("i-0abc", ZONE, SHAPE)["status"]
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"),
        ("Ready", "True", "KubeletReady"),
    ]
    assert all(c["lastHeartbeatTime"] and c["message"] for c in status["conditions"])
    kinds = [a["type"] for a in status["addresses"]]
    assert "InternalIP" in kinds and "Hostname" in kinds


def test_the_kubelet_advances_the_heartbeat_when_its_last_is_due_and_only_then():
    store = ObjectStore()
    store.create("nodes", "", node_object("i-0abc", ZONE, SHAPE))
    before = store.get("nodes", "", "i-0abc")
    soon = datetime.now(UTC) + timedelta(seconds=5)
    heartbeat(store, 10.0, soon)
    assert store.get("nodes", "", "i-0abc") == before  # not due: no write
    later = datetime.now(UTC) + timedelta(seconds=11)
    heartbeat(store, 10.0, later)
    after = store.get("nodes", "", "i-0abc")
    assert {c["lastHeartbeatTime"] for c in after["status"]["conditions"]} == {format_time(later)}
    assert [c["lastTransitionTime"] for c in after["status"]["conditions"]] == [
        c["lastTransitionTime"] for c in before["status"]["conditions"]
    ]
    assert int(after["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])


def test_pods_get_the_defaults_kube_apiserver_writes():
    store = ObjectStore()
    manifest = pod("dev", image="dev:1")
    init = {"name": "check", "image": "tools", "command": ["/bin/sh", "-c", "exit 0"]}
    manifest["spec"]["initContainers"] = [init]
    created = store.create("pods", NS, manifest)
    spec = created["spec"]
    container, check = spec["containers"][0], spec["initContainers"][0]
    assert container["ports"] == [{"name": "ssh", "containerPort": 22, "protocol": "TCP"}]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert check["imagePullPolicy"] == "Always"  # untagged: latest
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    assert container["readinessProbe"] == {
        "tcpSocket": {"port": "ssh"},
        "timeoutSeconds": 1,
        "periodSeconds": 10,
        "successThreshold": 1,
        "failureThreshold": 3,
    }
    assert (spec["enableServiceLinks"], spec["priority"], spec["securityContext"]) == (True, 0, {})
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"


def test_an_update_that_leaves_the_defaults_out_keeps_them():
    store = ObjectStore()
    created = store.create("pods", NS, pod("dev"))
    manifest = pod("dev")
    manifest["metadata"]["labels"] = {"changed": "yes"}
    updated = store.replace("pods", NS, "dev", manifest)
    assert updated["spec"] == created["spec"]
    assert store.get("pods", NS, "dev")["spec"]["containers"][0]["ports"][0]["protocol"] == "TCP"


def test_service_ports_get_their_protocol_and_target_port():
    store = ObjectStore()
    service = store.create(
        "services",
        NS,
        {"metadata": {"name": "ssh"}, "spec": {"selector": {"a": "b"}, "ports": [{"port": 22}]}},
    )
    assert service["spec"]["ports"] == [{"port": 22, "protocol": "TCP", "targetPort": 22}]


def test_a_running_pod_lists_its_ips_beside_its_ip():
    simulated = cluster("node-a")
    store = simulated.store
    store.create("pods", NS, pod("dev"))
    status = run_until(
        simulated,
        lambda: (s := store.get("pods", NS, "dev")["status"]).get("phase") == "Running" and s,
    )
    assert status["podIPs"] == [{"ip": status["podIP"]}]
    assert status["hostIPs"] == [{"ip": status["hostIP"]}]


def test_a_pod_running_its_init_containers_already_has_its_ips():
    simulated = cluster("node-a")
    store = simulated.store
    check = {"name": "check", "image": "dev:1", "command": ["/bin/sh", "-c", "exit 0"]}
    store.create("pods", NS, pod("dev", initContainers=[check]))
    status = run_until(
        simulated,
        lambda: (s := store.get("pods", NS, "dev")["status"]).get("initContainerStatuses") and s,
    )
    assert status["phase"] == "Pending"
    assert status["podIPs"] == [{"ip": status["podIP"]}]
    assert status["hostIPs"] == [{"ip": status["hostIP"]}]
