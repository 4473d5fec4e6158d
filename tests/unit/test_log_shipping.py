"""Pod output to CloudWatch Logs, declared once (deploy/kubernetes/fluent-bit.yaml) and read
by three: the cluster's Fluent Bit, the local cloud's kubelet (localcloud/kubernetes/
log_shipping.py, which reads that very ConfigMap) and the API (gpudev/logs/streams.py).
These tests keep them in step, keep the stand-in's start-up lines ones the script prints,
and keep the RBAC to what the shipping needs."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from moto import mock_aws

from cdk_app.declaration import API, POD_LOG_GROUP
from cdk_app.logs import SHIPPER_NAMESPACE, SHIPPER_SERVICE_ACCOUNT
from gpudev.cluster.objects import startup_script
from gpudev.logs.streams import stream_name
from gpudev.settings import ClusterSettings, PodLogSettings
from localcloud.kubernetes.container_logs import STARTUP_STEPS, startup_output
from localcloud.kubernetes.log_shipping import FluentBitConfig, LogShipper

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes"
RID = str(uuid.UUID(int=7))


def _pod(namespace: str = "gpu-dev", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "gpu-dev-00000000",
            "namespace": namespace,
            "uid": "u-1",
            "labels": {"gpu-dev/reservation": RID, **labels},
        }
    }


def test_fluent_bit_writes_the_group_the_stack_makes_and_the_api_reads():
    config = FluentBitConfig.from_manifest()
    assert config.log_group == POD_LOG_GROUP == PodLogSettings().pod_log_group
    assert API.environment["POD_LOG_GROUP"] == POD_LOG_GROUP


def test_fluent_bit_tails_the_dev_pods_namespaces_only():
    cluster = ClusterSettings(eks_cluster_name="c")  # type: ignore[call-arg]
    wanted = {
        cluster.kubernetes_namespace,
        cluster.kubernetes_profiling_namespace,
        cluster.kubernetes_docker_namespace,
    }
    assert FluentBitConfig.from_manifest().namespaces == wanted


def test_fluent_bits_stream_for_a_pod_is_the_one_the_api_reads():
    config = FluentBitConfig.from_manifest()
    pod = _pod()
    assert config.stream_of(pod, "gpu-dev", "abc") == stream_name(RID, "gpu-dev-00000000")


def test_a_pod_without_the_reservation_label_falls_back_to_the_prefix_and_tag():
    config = FluentBitConfig.from_manifest()
    pod = _pod()
    del pod["metadata"]["labels"]["gpu-dev/reservation"]
    stream = config.stream_of(pod, "gpu-dev", "abc")
    assert stream == (
        f"{config.stream_prefix}kube.var.log.containers.gpu-dev-00000000_gpu-dev_gpu-dev-abc.log"
    )
    assert not stream.startswith(RID)


def test_each_simulated_start_up_step_is_a_line_the_script_prints():
    script = startup_script()
    for step in STARTUP_STEPS:
        said = step.replace("{rank}", "${NODE_RANK:-0}")
        assert f'step "{said}"' in script, step


def test_the_simulated_steps_are_stamped_with_the_runs_start_and_the_pods_rank():
    container = {
        "command": ["/bin/bash", "-c", startup_script()],
        "env": [{"name": "NODE_RANK", "value": "1"}],
    }
    lines = startup_output(container, "2026-11-27T10:00:00Z")
    assert lines[0] == "2026-11-27T10:00:00Z gpu-dev: starting the dev server (node 1)"
    assert lines[-1] == "Server listening on :: port 22."
    assert startup_output({"command": ["sleep", "1"]}, "2026-11-27T10:00:00Z") == ()


@pytest.fixture
def logs() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("logs", region_name="us-east-2")
        client.create_log_group(logGroupName=POD_LOG_GROUP)
        yield client


def _events(logs: Any, stream: str) -> list[tuple[int, str]]:
    got = logs.get_log_events(logGroupName=POD_LOG_GROUP, logStreamName=stream)
    return [(e["timestamp"], e["message"]) for e in got["events"]]


def test_the_shipper_writes_each_line_at_its_time_in_the_pods_stream(logs):
    shipper = LogShipper(logs)
    shipper.ship(_pod(), "gpu-dev", "c1", "2026-11-27T10:00:00Z", "one\ntwo")
    shipper.ship(_pod(), "gpu-dev", "c2", "2026-11-27T10:00:05Z", "three")  # a restart
    at = 1_795_773_600_000  # 2026-11-27T10:00:00Z
    assert _events(logs, stream_name(RID, "gpu-dev-00000000")) == [
        (at, "one"),
        (at, "two"),
        (at + 5000, "three"),
    ]


def test_the_shipper_leaves_other_namespaces_and_silent_runs_alone(logs):
    shipper = LogShipper(logs)
    shipper.ship(_pod(namespace="kube-system"), "x", "c", "2026-11-27T10:00:00Z", "hello")
    shipper.ship(_pod(), "gpu-dev", "c", "2026-11-27T10:00:00Z", "")  # never ran: nothing
    assert logs.describe_log_streams(logGroupName=POD_LOG_GROUP)["logStreams"] == []


def test_a_write_cloudwatch_refuses_is_logged_and_dropped(logs, caplog):
    logs.delete_log_group(logGroupName=POD_LOG_GROUP)
    LogShipper(logs).ship(_pod(), "gpu-dev", "c", "2026-11-27T10:00:00Z", "lost")
    assert "shipping 1 lines to" in caplog.text


def _rules_of(subject: str) -> list[dict[str, Any]]:
    """The rules every binding of `subject` (`kind:namespace:name`) grants, in all files."""
    documents = [
        d
        for path in sorted(MANIFESTS.glob("*.yaml"))
        for d in yaml.safe_load_all(path.read_text())
        if d
    ]
    roles = {(d["kind"], d["metadata"]["name"]): d for d in documents if d["kind"].endswith("Role")}
    rules = []
    for binding in (d for d in documents if d["kind"].endswith("RoleBinding")):
        for s in binding["subjects"]:
            if f"{s['kind']}:{s.get('namespace', '')}:{s['name']}" == subject:
                rules += roles[(binding["roleRef"]["kind"], binding["roleRef"]["name"])]["rules"]
    return rules


def test_fluent_bit_may_read_pods_and_namespaces_and_nothing_else():
    subject = f"ServiceAccount:{SHIPPER_NAMESPACE}:{SHIPPER_SERVICE_ACCOUNT}"
    assert _rules_of(subject) == [
        {"apiGroups": [""], "resources": ["pods", "namespaces"], "verbs": ["get", "list", "watch"]}
    ]


def test_reading_logs_needs_no_kubernetes_grant_and_the_api_has_none():
    """The API reads CloudWatch Logs, never the cluster: no access entry, no group; only the
    lifecycle's failed-start tail reads pods/log (rbac.yaml)."""
    assert API.uses_cluster is False
    readers = [r for r in _rules_of("Group::gpu-dev-readers") if "pods/log" in r["resources"]]
    assert readers == []
    lifecycle = [r for r in _rules_of("Group::gpu-dev-lifecycle") if "pods/log" in r["resources"]]
    assert lifecycle and all(r["verbs"] == ["get"] for r in lifecycle)


def test_the_log_shipping_namespace_is_not_a_dev_pods_namespace():
    namespaces = [
        d["metadata"]["name"]
        for d in yaml.safe_load_all((MANIFESTS / "fluent-bit.yaml").read_text())
        if d and d["kind"] == "Namespace"
    ]
    assert namespaces == [SHIPPER_NAMESPACE]
    assert not re.search(SHIPPER_NAMESPACE, (MANIFESTS / "namespace.yaml").read_text())
