"""apps/v1 DaemonSets in the stand-in (localcloud/kubernetes/apps.py, daemonsets.py): refused
as kube-apiserver refuses them, and run as kube-controller-manager runs them: one pod on each
node the template fits, a node that joins later included, replaced when the template
changes, gone with its node or its DaemonSet. The pods go through the kubelet, so their
images land in the node's image store: a dev pod there then starts without a pull."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml  # type: ignore[import-untyped]
from moto import mock_aws

from gpudev.prepuller.plan import template_patch
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.image_pulls import LocalRegistry
from localcloud.kubernetes.nodes import node_object
from localcloud.kubernetes.store import ObjectStore
from localcloud.registry import LOCAL_TOOLS_IMAGE, seed_registry
from tests.support.stand_in_cluster import NS, SHAPE, ZONE, cluster, events_of, pod, run_until

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "kubernetes" / "prepuller" / "daemonset.yaml"
SYSTEM = "kube-system"
NAME = "gpu-dev-prepuller"
OWN = "123456789012.dkr.ecr.us-east-2.amazonaws.com"
TEAM = f"{OWN}/gpu-dev-images/team-cuda:1"


def _manifest() -> dict[str, Any]:
    return dict(yaml.safe_load(MANIFEST.read_text()))


def _refusal(store: ObjectStore, body: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as refused:
        store.create("daemonsets", SYSTEM, body)
    return refused.value


def _pods(store: ObjectStore, namespace: str = SYSTEM) -> list[dict[str, Any]]:
    return [
        p
        for p in store.list("pods", namespace)["items"]
        if not p["metadata"].get("deletionTimestamp")
    ]


def _by_node(store: ObjectStore) -> dict[str, dict[str, Any]]:
    return {p["spec"]["nodeName"]: p for p in _pods(store)}


def test_the_pre_pullers_manifest_is_accepted_and_defaulted():
    created = ObjectStore().create("daemonsets", SYSTEM, _manifest())
    assert created["apiVersion"] == "apps/v1" and created["metadata"]["generation"] == 1
    assert created["spec"]["updateStrategy"]["rollingUpdate"] == {
        "maxUnavailable": "100%",
        "maxSurge": 0,
    }
    assert created["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert created["spec"]["revisionHistoryLimit"] == 10


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (lambda d: d["spec"].pop("selector"), "spec.selector", "Required value"),
        (
            lambda d: d["spec"].update(selector={}),
            "spec.selector",
            "empty selector is invalid for daemonset",
        ),
        (
            lambda d: d["spec"]["template"]["metadata"].update(labels={"app": "other"}),
            "spec.template.metadata.labels",
            "`selector` does not match template `labels`",
        ),
        (
            lambda d: d["spec"]["template"]["spec"].update(restartPolicy="Never"),
            "spec.template.spec.restartPolicy",
            'Unsupported value: "Never": supported values: "Always"',
        ),
        (
            lambda d: d["spec"]["template"]["spec"].update(activeDeadlineSeconds=5),
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in DaemonSet is not Supported",
        ),
        (
            lambda d: d["spec"]["template"]["spec"]["containers"][0].pop("image"),
            "spec.template.spec.containers[0].image",
            "Required value",
        ),
        (
            lambda d: d["spec"]["updateStrategy"].update(type="Recreate"),
            "spec.updateStrategy.type",
            'Unsupported value: "Recreate"',
        ),
        (
            lambda d: d["spec"]["updateStrategy"]["rollingUpdate"].update(maxUnavailable="120%"),
            "spec.updateStrategy.rollingUpdate.maxUnavailable",
            "must not be greater than 100%",
        ),
        (
            lambda d: d["spec"]["updateStrategy"]["rollingUpdate"].update(maxUnavailable=0),
            "spec.updateStrategy.rollingUpdate.maxUnavailable",
            "may not be 0 when `maxSurge` is 0",
        ),
        (
            lambda d: d["metadata"].update(name="Not_A_Name"),
            "metadata.name",
            "a lowercase RFC 1123 subdomain",
        ),
    ],
)
def test_a_daemon_set_the_api_server_refuses_is_refused_with_its_field(change, field, message):
    body = _manifest()
    change(body)
    store = ObjectStore()
    refused = _refusal(store, body)
    assert refused.code == 422 and refused.kind == "DaemonSet"
    assert any(c["field"] == field and message in c["message"] for c in refused.causes or [])
    assert store.list("daemonsets", SYSTEM)["items"] == []  # nothing written


def test_the_selector_cannot_change_and_the_generation_counts_spec_changes_only():
    store = ObjectStore()
    store.create("daemonsets", SYSTEM, _manifest())
    with pytest.raises(ApiError) as refused:
        store.patch(
            "daemonsets",
            SYSTEM,
            NAME,
            {"spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": "x"}}}},
        )
    assert "field is immutable" in refused.value.message
    labelled = store.patch("daemonsets", SYSTEM, NAME, {"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == 1
    patched = store.patch("daemonsets", SYSTEM, NAME, template_patch(["busybox:1"], "tools:1"))
    assert patched["metadata"]["generation"] == 2
    init = patched["spec"]["template"]["spec"]["initContainers"]
    assert [c["name"] for c in init] == ["copy-noop", "pull-0"]
    assert init[1]["terminationMessagePath"] == "/dev/termination-log"  # defaulted as a pod's


@pytest.fixture
def ecr() -> Any:
    with mock_aws():
        client = boto3.client("ecr", region_name="us-east-2")
        seed_registry(client)
        yield client


def _pulling_events(store: ObjectStore, namespace: str, name: str) -> list[str]:
    items = store.list("events", namespace, field_selector=f"involvedObject.name={name}")["items"]
    return [e["message"] for e in items if e["reason"] == "Pulling"]


def test_every_gpu_node_runs_one_pod_and_a_node_that_joins_later_gets_one_with_the_images(
    ecr: Any,
):
    simulated = cluster("gpu-a")
    store = simulated.store
    plain = node_object("plain", ZONE, SHAPE)
    del plain["metadata"]["labels"]["GpuType"]  # not a GPU node: no pod there
    store.create("nodes", "", plain)
    pulls = simulated.kubelet.image_pulls
    pulls.registry = LocalRegistry(ecr, OWN, ("registry.k8s.io/pause",))
    pulls.bytes_per_second = 6.2e9 / 0.2  # the team image in 0.2 s
    store.create("daemonsets", SYSTEM, _manifest())
    store.patch("daemonsets", SYSTEM, NAME, template_patch([TEAM], LOCAL_TOOLS_IMAGE))
    run_until(simulated, lambda: set(_by_node(store)) == {"gpu-a"})

    store.create("nodes", "", node_object("gpu-b", ZONE, SHAPE))  # joins later
    run_until(
        simulated,
        lambda: (
            {n: p["status"].get("phase") for n, p in _by_node(store).items()}
            == {"gpu-a": "Running", "gpu-b": "Running"}
        ),
    )
    late = _by_node(store)["gpu-b"]
    assert late["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
    assert f'Pulling image "{TEAM}"' in _pulling_events(store, SYSTEM, late["metadata"]["name"])
    status = store.get("daemonsets", SYSTEM, NAME)["status"]
    assert status["desiredNumberScheduled"] == 2 and status["updatedNumberScheduled"] == 2

    # A dev pod on the late node finds the image there: no pull.
    store.create("pods", NS, pod("dev", image=TEAM, nodeName="gpu-b"))
    run_until(simulated, lambda: store.get("pods", NS, "dev")["status"].get("phase") == "Running")
    assert _pulling_events(store, NS, "dev") == []
    pulled = [e["message"] for e in events_of(store, "dev") if e["reason"] == "Pulled"]
    assert pulled == [f'Container image "{TEAM}" already present on machine']


def test_a_changed_template_replaces_the_pods_and_a_deleted_daemon_set_takes_them_along():
    simulated = cluster("gpu-a", "gpu-b")
    store = simulated.store
    store.create("daemonsets", SYSTEM, _manifest())
    run_until(simulated, lambda: len(_pods(store)) == 2)
    first = {p["metadata"]["name"] for p in _pods(store)}
    store.patch("daemonsets", SYSTEM, NAME, template_patch(["busybox:1"], "busybox:1"))
    run_until(
        simulated,
        lambda: (
            len(_pods(store)) == 2 and not first & {p["metadata"]["name"] for p in _pods(store)}
        ),
    )
    assert all(p["metadata"]["labels"]["pod-template-generation"] == "2" for p in _pods(store))
    store.delete("daemonsets", SYSTEM, NAME)
    run_until(simulated, lambda: store.list("pods", SYSTEM)["items"] == [])


def test_a_node_whose_taint_the_template_does_not_tolerate_gets_no_pod():
    simulated = cluster("gpu-a")
    store = simulated.store
    tainted = node_object("tainted", ZONE, SHAPE)
    tainted["spec"]["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    store.create("nodes", "", tainted)
    body = copy.deepcopy(_manifest())
    body["spec"]["template"]["spec"]["tolerations"] = []
    store.create("daemonsets", SYSTEM, body)
    run_until(simulated, lambda: set(_by_node(store)) == {"gpu-a"})
    simulated.step()
    assert set(_by_node(store)) == {"gpu-a"}


def test_in_its_own_namespace_the_pre_puller_runs_restricted_and_a_privileged_template_never_runs():
    """deploy/kubernetes/prepuller/namespace.yaml enforces `restricted`: the updater's right
    to patch the template cannot become a privileged pod on every node."""
    simulated = cluster("gpu-a")
    store = simulated.store
    folder = MANIFEST.parent
    store.create("namespaces", "", yaml.safe_load((folder / "namespace.yaml").read_text()))
    own = _manifest()["metadata"]["namespace"]
    assert own == "gpu-dev-prepuller"
    store.create("daemonsets", own, _manifest())
    store.patch("daemonsets", own, NAME, template_patch(["busybox:1"], "busybox:1"))
    run_until(
        simulated, lambda: [p["status"].get("phase") for p in _pods(store, own)] == ["Running"]
    )

    escalated = template_patch(["busybox:1"], "busybox:1")
    escalated["spec"]["template"]["spec"]["containers"] = [
        {"name": "pause", "image": "busybox:1", "securityContext": {"privileged": True}}
    ]
    store.patch("daemonsets", own, NAME, escalated)
    for _ in range(20):
        simulated.step()
    assert _pods(store, own) == []  # the old pod replaced, the new one refused at admission
