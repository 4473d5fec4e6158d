"""Pod isolation on the stand-in, through the official client as our functions build it:
NetworkPolicy is stored and served by networking.k8s.io/v1 (create, read, list by label,
replace, patch, delete, deletecollection, discovery), validated, and Pod Security admission
`baseline` refuses on gpu-dev what kube-apiserver refuses, with its 403 and message, while the
profiling namespace admits a pod with SYS_ADMIN."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from localcloud.kubernetes.pod_security import namespaces
from localcloud.stack import LocalCloud
from tests.e2e.conftest import eks_api_client

NAMESPACE = "gpu-dev"
PROFILING_NAMESPACE = "gpu-dev-profiling"


@pytest.fixture(scope="module")
def networking(local_cloud: LocalCloud) -> Iterator[client.NetworkingV1Api]:
    api_client = eks_api_client(local_cloud)
    yield client.NetworkingV1Api(api_client)
    api_client.close()


def _policy(name: str, run: str, port: Any = 29500) -> dict[str, Any]:
    peers = {"podSelector": {"matchLabels": {"gpu-dev/reservation": run}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "labels": {"run": run}},
        "spec": {
            **peers,
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [peers], "ports": [{"port": port}]}],
            "egress": [{"to": [peers]}],
        },
    }


def _pod(name: str, container_security: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {
                    "name": "gpu-dev",
                    "image": "pytorch/pytorch",
                    "securityContext": container_security,
                }
            ],
            **spec,
        },
    }


def _status(error: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(error.body)
    return body


def test_network_policies_are_stored_served_and_deleted_through_networking_v1(
    networking: client.NetworkingV1Api,
):
    run = uuid.uuid4().hex[:8]
    created = networking.create_namespaced_network_policy(NAMESPACE, _policy(f"np-{run}", run))
    assert created.api_version == "networking.k8s.io/v1" and created.kind == "NetworkPolicy"
    assert created.metadata.uid and created.metadata.resource_version
    assert created.spec.ingress[0].ports[0].protocol == "TCP"  # defaulted as the server does
    networking.create_namespaced_network_policy(NAMESPACE, _policy(f"np-{run}-b", run))
    networking.create_namespaced_network_policy(NAMESPACE, _policy(f"other-{run}", "someone"))

    read = networking.read_namespaced_network_policy(f"np-{run}", NAMESPACE)
    assert read.spec.pod_selector.match_labels == {"gpu-dev/reservation": run}
    assert read.spec.policy_types == ["Ingress", "Egress"]
    listed = networking.list_namespaced_network_policy(NAMESPACE, label_selector=f"run={run}")
    assert sorted(p.metadata.name for p in listed.items) == [f"np-{run}", f"np-{run}-b"]
    everywhere = networking.list_network_policy_for_all_namespaces(label_selector=f"run={run}")
    assert len(everywhere.items) == 2

    read.spec.ingress[0].ports[0].port = 22
    replaced = networking.replace_namespaced_network_policy(f"np-{run}", NAMESPACE, read)
    assert replaced.spec.ingress[0].ports[0].port == 22
    patched = networking.patch_namespaced_network_policy(
        f"np-{run}", NAMESPACE, {"metadata": {"labels": {"patched": "yes"}}}
    )
    assert patched.metadata.labels == {"run": run, "patched": "yes"}

    networking.delete_namespaced_network_policy(f"np-{run}", NAMESPACE)
    with pytest.raises(ApiException) as gone:
        networking.read_namespaced_network_policy(f"np-{run}", NAMESPACE)
    assert gone.value.status == 404
    networking.delete_collection_namespaced_network_policy(NAMESPACE, label_selector=f"run={run}")
    assert (
        networking.list_namespaced_network_policy(NAMESPACE, label_selector=f"run={run}").items
        == []
    )
    networking.delete_namespaced_network_policy(f"other-{run}", NAMESPACE)


def test_network_policies_are_discoverable_and_only_under_their_group(local_cloud: LocalCloud):
    api_client = eks_api_client(local_cloud)
    try:
        groups = client.ApisApi(api_client).get_api_versions()
        assert [g.name for g in groups.groups] == [
            "networking.k8s.io",
            "apps",  # the image pre-puller's DaemonSet (deploy/kubernetes/prepuller/)
            "rbac.authorization.k8s.io",
            "authorization.k8s.io",
        ]
        resources = client.NetworkingV1Api(api_client).get_api_resources()
        assert [(r.name, r.kind, r.namespaced) for r in resources.resources] == [
            ("networkpolicies", "NetworkPolicy", True)
        ]
        core = client.CoreV1Api(api_client).get_api_resources()
        assert "networkpolicies" not in {r.name for r in core.resources}
        # a core path for the networking resource is not served
        config = api_client.configuration
        config.refresh_api_key_hook(config)
        headers = {"Authorization": config.get_api_key_with_prefix("authorization")}
        assert local_cloud.kubernetes is not None
        status, _ = local_cloud.kubernetes.handle(
            "GET", f"/api/v1/namespaces/{NAMESPACE}/networkpolicies", headers, b""
        )
        assert status == 404
    finally:
        api_client.close()


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"port": 0}, "spec.ingress[0].ports[0].port", "must be between 1 and 65535, inclusive"),
        ({"port": 70000}, "spec.ingress[0].ports[0].port", "must be between 1 and 65535"),
        ({"protocol": "ICMP"}, "spec.ingress[0].ports[0].protocol", 'Unsupported value: "ICMP"'),
    ],
)
def test_a_bad_network_policy_is_refused_with_422_and_not_stored(
    networking: client.NetworkingV1Api, change: dict[str, Any], field: str, message: str
):
    run = uuid.uuid4().hex[:8]
    policy = _policy(f"bad-{run}", run)
    policy["spec"]["ingress"][0]["ports"][0] |= change
    with pytest.raises(ApiException) as refused:
        networking.create_namespaced_network_policy(NAMESPACE, policy)
    status = _status(refused.value)
    assert refused.value.status == 422 and status["reason"] == "Invalid"
    assert status["message"].startswith(f'NetworkPolicy "bad-{run}" is invalid: {field}: ')
    assert message in status["message"]
    assert (
        networking.list_namespaced_network_policy(NAMESPACE, label_selector=f"run={run}").items
        == []
    )


def test_a_network_policy_with_a_bad_name_label_or_peer_is_refused(
    networking: client.NetworkingV1Api,
):
    run = uuid.uuid4().hex[:8]
    for mutate, expected in [
        (lambda p: p["metadata"].update(name="Not_A_Name"), "metadata.name"),
        (lambda p: p["metadata"]["labels"].update(run="bad value"), "metadata.labels"),
        (lambda p: p["spec"]["ingress"][0].update({"from": [{}]}), "must specify a peer"),
        (
            lambda p: p["spec"]["egress"][0]["to"][0].update(ipBlock={"cidr": "10.0.0.0/8"}),
            "may not specify both ipBlock and another peer",
        ),
    ]:
        policy = _policy(f"bad-{run}", run)
        mutate(policy)
        with pytest.raises(ApiException) as refused:
            networking.create_namespaced_network_policy(NAMESPACE, policy)
        assert refused.value.status == 422 and expected in _status(refused.value)["message"]


def test_the_dev_namespaces_carry_the_labels_of_the_deployed_manifest(local_cloud: LocalCloud):
    core = client.CoreV1Api(eks_api_client(local_cloud))
    for manifest in namespaces():
        labels = core.read_namespace(manifest["metadata"]["name"]).metadata.labels
        assert manifest["metadata"]["labels"].items() <= labels.items()
    gpu_dev = core.read_namespace(NAMESPACE).metadata.labels
    assert gpu_dev["pod-security.kubernetes.io/enforce"] == "baseline"
    assert gpu_dev["pod-security.kubernetes.io/warn"] == "restricted"
    assert gpu_dev["kubernetes.io/metadata.name"] == NAMESPACE
    profiling = core.read_namespace(PROFILING_NAMESPACE).metadata.labels
    assert profiling["pod-security.kubernetes.io/enforce"] == "privileged"


REFUSALS = [
    (
        {"capabilities": {"add": ["SYS_ADMIN", "CHOWN"]}},
        {},
        'non-default capabilities (container "gpu-dev" must not include "SYS_ADMIN" in '
        "securityContext.capabilities.add)",
    ),
    (
        {"capabilities": {"add": ["SYS_ADMIN", "IPC_LOCK"]}},
        {},
        'non-default capabilities (container "gpu-dev" must not include "IPC_LOCK", '
        '"SYS_ADMIN" in securityContext.capabilities.add)',
    ),
    (
        {"privileged": True},
        {},
        'privileged (container "gpu-dev" must not set securityContext.privileged=true)',
    ),
    (
        {},
        {"hostNetwork": True, "hostPID": True},
        "host namespaces (hostNetwork=true, hostPID=true)",
    ),
    (
        {},
        {"volumes": [{"name": "root", "hostPath": {"path": "/"}}]},
        'hostPath volumes (volume "root")',
    ),
    (
        {},
        {"securityContext": {"seccompProfile": {"type": "Unconfined"}}},
        'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")',
    ),
    (
        {"procMount": "Unmasked"},
        {},
        'procMount (container "gpu-dev" must not set securityContext.procMount to "Unmasked")',
    ),
    (
        {},
        {"securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}},
        "forbidden sysctls (kernel.msgmax)",
    ),
    (
        {"appArmorProfile": {"type": "Unconfined"}},
        {},
        'forbidden AppArmor profile (container "gpu-dev" must not set AppArmor profile type '
        'to "Unconfined")',
    ),
]


@pytest.mark.parametrize(("container_security", "spec", "violation"), REFUSALS)
def test_pod_security_baseline_refuses_on_gpu_dev_with_403_and_stores_nothing(
    core: client.CoreV1Api,
    container_security: dict[str, Any],
    spec: dict[str, Any],
    violation: str,
):
    name = f"psa-{uuid.uuid4().hex[:8]}"
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod(NAMESPACE, _pod(name, container_security, **spec))
    status = _status(refused.value)
    assert refused.value.status == 403
    assert status["reason"] == "Forbidden"
    assert status["details"] == {"name": name, "kind": "pods"}
    assert status["message"] == (
        f'pods "{name}" is forbidden: violates PodSecurity "baseline:latest": {violation}'
    )
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod(name, NAMESPACE)
    assert missing.value.status == 404


def test_every_violation_is_named_in_one_refusal(core: client.CoreV1Api):
    name = f"psa-{uuid.uuid4().hex[:8]}"
    pod = _pod(
        name,
        {"capabilities": {"add": ["SYS_ADMIN"]}},
        hostIPC=True,
        securityContext={"seccompProfile": {"type": "Unconfined"}},
    )
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 22, "hostPort": 2222}]
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod(NAMESPACE, pod)
    # capabilities and seccomp last: the checks restricted replaces (`Overlap`) run after
    # the other baseline checks (pod-security-admission's policy/registry.go)
    assert _status(refused.value)["message"].endswith(
        'host namespaces (hostIPC=true), hostPort (container "gpu-dev" uses hostPort 2222), '
        'non-default capabilities (container "gpu-dev" must not include "SYS_ADMIN" in '
        "securityContext.capabilities.add), seccompProfile (pod must not set "
        'securityContext.seccompProfile.type to "Unconfined")'
    )


def test_baseline_admits_the_default_capabilities_and_runtime_default_seccomp(
    core: client.CoreV1Api,
):
    name = f"psa-{uuid.uuid4().hex[:8]}"
    pod = _pod(
        name,
        {
            "allowPrivilegeEscalation": False,
            "capabilities": {"add": ["CHOWN"], "drop": ["NET_RAW"]},
        },
        securityContext={"seccompProfile": {"type": "RuntimeDefault"}},
    )
    core.create_namespaced_pod(NAMESPACE, pod)
    core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)


def test_the_profiling_namespace_admits_a_pod_with_sys_admin(core: client.CoreV1Api):
    name = f"prof-{uuid.uuid4().hex[:8]}"
    created = core.create_namespaced_pod(
        PROFILING_NAMESPACE, _pod(name, {"capabilities": {"add": ["SYS_ADMIN"]}})
    )
    assert created.spec.containers[0].security_context.capabilities.add == ["SYS_ADMIN"]
    core.delete_namespaced_pod(name, PROFILING_NAMESPACE, grace_period_seconds=0)
