"""`make deploy-check` on the cluster side, against the Kubernetes stand-in through the
client our functions build: the namespaces exist (the stand-in creates them from
deploy/kubernetes/namespace.yaml) but network-policies.yaml is not applied, so the check
says so; once applied as an operator would, it passes."""

from __future__ import annotations

from pathlib import Path

import yaml

from localcloud.stack import LocalCloud
from tests.e2e.conftest import eks_api_client
from tools.deploy_check import NAMESPACES, check_kubernetes

POLICIES = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "network-policies.yaml"


def test_the_cluster_check_names_what_is_not_applied_then_passes(local_cloud: LocalCloud):
    from kubernetes import client

    api_client = eks_api_client(local_cloud)
    networking = client.NetworkingV1Api(api_client)
    created: list[tuple[str, str]] = []
    try:
        checks = {f.check: f for f in check_kubernetes(api_client)}
        for namespace in NAMESPACES:
            assert not checks[f"namespace {namespace}"].ok
            assert "network-policies.yaml" in checks[f"namespace {namespace}"].detail
        assert checks["GPU nodes labelled"].ok

        for manifest in filter(None, yaml.safe_load_all(POLICIES.read_text())):
            namespace = manifest["metadata"]["namespace"]
            networking.create_namespaced_network_policy(namespace, manifest)
            created.append((namespace, manifest["metadata"]["name"]))
        checks = {f.check: f for f in check_kubernetes(api_client)}
        assert all(f.ok for f in checks.values()), checks
    finally:
        for namespace, name in created:
            networking.delete_namespaced_network_policy(name, namespace)
        api_client.close()
