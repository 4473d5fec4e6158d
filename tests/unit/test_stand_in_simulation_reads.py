"""The simulated cluster reads the store copy-free (`frozen=True`: the stored objects
themselves), so none of its readers may change what it read. This test runs the cluster
tick by tick over a store holding pods in every state the simulation handles (scheduled or
not, init containers completing and failing, running with a readiness probe, crashing and
restarting, rejected by the kubelet, on an EBS volume, Terminating) and fails if a tick
changed any object the store held before it: a reader that writes into a shared object
either fails at once (frozen objects refuse changes) or shows here as a changed object."""

from __future__ import annotations

import json
import time
from typing import Any

from localcloud.kubernetes.cluster import SimulatedCluster
from localcloud.kubernetes.container_restarts import Crash
from localcloud.kubernetes.nodes import NodeShape, node_object
from localcloud.kubernetes.resources import KINDS
from localcloud.kubernetes.store import ObjectStore
from tests.support.stand_in_cluster import NS, ZONE, pod

Obj = dict[str, Any]
SHAPE = NodeShape("t4", "g4dn.12xlarge", 4, 48, 192)


class Ec2:
    """The EC2 calls the EBS CSI attach makes (the outer boundary): every volume in the
    nodes' zone, attachable."""

    def __init__(self) -> None:
        self.attached: list[str] = []

    def describe_volumes(self, VolumeIds: list[str]) -> Obj:
        return {"Volumes": [{"VolumeId": VolumeIds[0], "AvailabilityZone": ZONE}]}

    def describe_instances(self, InstanceIds: list[str]) -> Obj:
        return {"Reservations": [{"Instances": [{"Placement": {"AvailabilityZone": ZONE}}]}]}

    def attach_volume(self, VolumeId: str, **_: Any) -> None:
        self.attached.append(VolumeId)

    def detach_volume(self, VolumeId: str, **_: Any) -> None:
        self.attached.remove(VolumeId)


def _init(image: str) -> list[Obj]:
    return [{"name": "check", "image": image, "command": ["/bin/sh", "-c", "exit 0"]}]


def _populated() -> tuple[ObjectStore, SimulatedCluster, Ec2]:
    store, ec2 = ObjectStore(), Ec2()
    for name in ("node-a", "node-b", "node-c"):
        store.create("nodes", "", node_object(name, ZONE, SHAPE))
    store.create(
        "persistentvolumes",
        "",
        {
            "metadata": {"name": "home"},
            "spec": {
                "capacity": {"storage": "16Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"},
            },
        },
    )
    store.create(
        "persistentvolumeclaims",
        NS,
        {
            "metadata": {"name": "home"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "volumeName": "home",
                "resources": {"requests": {"storage": "16Gi"}},
            },
        },
    )
    home = [{"name": "home", "persistentVolumeClaim": {"claimName": "home"}}]
    for manifest in (
        pod("scheduled"),
        pod("initialized", initContainers=_init("img")),
        pod("init-fails", initContainers=_init("shell-less")),
        pod("crashes", image="crash"),
        pod("too-big", gpus=16),
        pod("fills-c", gpus=4, nodeName="node-c"),
        pod("rejected", gpus=4, nodeName="node-c"),
        pod("on-a-disk", volumes=home),
        pod("deleted"),
    ):
        store.create("pods", NS, manifest)
    cluster = SimulatedCluster(
        store, None, {}, 0.0, 0.0, ec2=ec2, probe_seconds=0.0, jupyter_images=frozenset()
    )
    cluster.kubelet.trusted_scripts = frozenset()  # init containers complete unrun
    cluster.kubelet.shell_less_images = frozenset({"shell-less"})
    cluster.kubelet.crashing_images = {"crash": Crash(exit_code=1, message="boom")}
    return store, cluster, ec2


def _held(store: ObjectStore) -> list[tuple[Obj, str]]:
    """Every stored object as the simulation reads it (copy-free), with its JSON then."""
    return [
        (obj, json.dumps(obj, sort_keys=True))
        for resource in KINDS
        for obj in store.list(resource, None, frozen=True)["items"]
    ]


def test_no_tick_changes_an_object_the_store_held_before_it():
    store, cluster, ec2 = _populated()
    for tick in range(60):
        if tick == 15:  # Terminating: the kubelet stops it and deletes it
            store.delete("pods", NS, "deleted")
            store.delete("persistentvolumeclaims", NS, "home")  # kept while its pod runs
        held = _held(store)
        cluster.step()
        changed = [
            f"{obj['kind']} {obj['metadata']['name']}"
            for obj, text in held
            if json.dumps(obj, sort_keys=True) != text
        ]
        assert changed == [], f"tick {tick} changed stored objects in place: {changed}"
        time.sleep(0.01)  # the kubelet's back-offs (0.2 s at first) pass in real time
    pods = {p["metadata"]["name"]: p for p in store.list("pods", NS)["items"]}
    _assert_every_state_was_reached(pods, store, ec2)


def _assert_every_state_was_reached(pods: dict[str, Obj], store: ObjectStore, ec2: Ec2) -> None:
    """The ticks went through what the simulation does, so its readers were all run."""
    assert "deleted" not in pods
    for name in ("scheduled", "initialized", "on-a-disk", "fills-c"):
        assert pods[name]["status"]["phase"] == "Running", name
        ready = {c["type"]: c["status"] for c in pods[name]["status"]["conditions"]}
        assert ready["Ready"] == "True", name
    assert pods["rejected"]["status"]["phase"] == "Failed"
    assert pods["too-big"]["status"]["conditions"][0]["reason"] == "Unschedulable"
    init_status = pods["init-fails"]["status"]["initContainerStatuses"][0]
    assert init_status["restartCount"] >= 1, init_status
    crashed = pods["crashes"]["status"]["containerStatuses"][0]
    assert crashed["restartCount"] >= 1, crashed
    claim = store.get("persistentvolumeclaims", NS, "home")
    assert claim["status"]["phase"] == "Bound" and claim["metadata"]["deletionTimestamp"]
    assert ec2.attached == ["vol-1"]
