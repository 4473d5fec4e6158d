"""`make deploy-check` on the cluster side, against the Kubernetes stand-in through the
client our functions build: the local cloud applies deploy/kubernetes/ at start as an
operator would, so the check passes; without a namespace's network policies it says which
file to apply."""

from __future__ import annotations

from pathlib import Path

import yaml

from localcloud.stack import LocalCloud
from tests.e2e.conftest import eks_api_client
from tools.deploy_check import NAMESPACES, check_kubernetes

POLICIES = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "network-policies.yaml"


def test_the_cluster_check_passes_then_names_what_is_not_applied(local_cloud: LocalCloud):
    from kubernetes import client

    api_client = eks_api_client(local_cloud)
    networking = client.NetworkingV1Api(api_client)
    removed = [
        m
        for m in filter(None, yaml.safe_load_all(POLICIES.read_text()))
        if m["metadata"]["namespace"] == NAMESPACES[0]
    ]
    try:
        checks = {f.check: f for f in check_kubernetes(api_client)}
        assert all(f.ok for f in checks.values()), checks

        for manifest in removed:
            networking.delete_namespaced_network_policy(manifest["metadata"]["name"], NAMESPACES[0])
        checks = {f.check: f for f in check_kubernetes(api_client)}
        assert not checks[f"namespace {NAMESPACES[0]}"].ok
        assert "network-policies.yaml" in checks[f"namespace {NAMESPACES[0]}"].detail
        assert checks[f"namespace {NAMESPACES[1]}"].ok
        assert checks["GPU nodes labelled"].ok
        # the h100 group's nodes: EFA advertised, one zone (localcloud/cluster.json)
        assert checks["EFA nodes"].ok and "2 nodes advertise" in checks["EFA nodes"].detail
    finally:
        existing = {
            p.metadata.name for p in networking.list_namespaced_network_policy(NAMESPACES[0]).items
        }
        for manifest in removed:
            if manifest["metadata"]["name"] not in existing:
                networking.create_namespaced_network_policy(NAMESPACES[0], manifest)
        api_client.close()
