"""kubectl drives the local cloud's Kubernetes stand-in as an operator drives EKS: over
HTTPS with the CA that DescribeCluster hands out, an EKS token from the kubeconfig's exec
plugin, server-side tables, short names, OpenAPI for validation and `explain`, and dry runs
that write nothing."""

from __future__ import annotations

import base64
import configparser
import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from localcloud.cluster_access import MANIFESTS
from localcloud.stack import LocalCloud
from tests.support.kubectl import kubectl
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
# The README's `kubectl apply -f deploy/kubernetes/`: namespaces, RBAC, network policies.
# The files the local cloud applies (cluster_access.MANIFESTS). fluent-bit.yaml is not one:
# the stand-in serves no DaemonSets, and its kubelet plays Fluent Bit (log_shipping.py).
FILES = [arg for name in MANIFESTS for arg in ("-f", str(ROOT / "deploy" / "kubernetes" / name))]


@pytest.fixture(scope="module")
def kubeconfig(local_cloud: LocalCloud) -> Path:
    path = local_cloud.write_kubeconfig()
    assert path.stat().st_mode & 0o777 == 0o600
    return path


def _stored(cloud: LocalCloud) -> dict[tuple[str, str, str], str]:
    """What the manifests touch, by key: each object's resourceVersion."""
    assert cloud.kubernetes is not None
    store = cloud.kubernetes.store
    return {
        (resource, item["metadata"].get("namespace", ""), item["metadata"]["name"]): item[
            "metadata"
        ]["resourceVersion"]
        for resource in ("namespaces", "networkpolicies", "configmaps")
        for item in store.list(resource, None, frozen=True)["items"]
    }


def test_describe_cluster_hands_out_the_stand_ins_https_endpoint_and_ca(local_cloud: LocalCloud):
    assert local_cloud.aws is not None and local_cloud.kubernetes_certificate is not None
    cluster = local_cloud.aws.client("eks").describe_cluster(name=local_cloud.cluster_name)
    endpoint = cluster["cluster"]["endpoint"]
    assert endpoint.startswith("https://127.0.0.1:")
    assert endpoint == local_cloud.kubernetes.url  # type: ignore[union-attr]
    pem = local_cloud.kubernetes_certificate.ca_pem
    assert base64.b64decode(cluster["cluster"]["certificateAuthority"]["data"]) == pem


def test_get_nodes_wide_shows_kube_apiservers_columns(kubeconfig: Path, local_cloud: LocalCloud):
    assert local_cloud.kubernetes is not None
    store = local_cloud.kubernetes.store
    names = wait_for(
        lambda: [n["metadata"]["name"] for n in store.list("nodes", None)["items"]],
        message="nodes registered",
    )
    shown = kubectl(kubeconfig, "get", "nodes", "-o", "wide").stdout.splitlines()
    assert shown[0].split() == [
        "NAME",
        "STATUS",
        "ROLES",
        "AGE",
        "VERSION",
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ]
    assert {line.split()[0] for line in shown[1:]} >= set(names)
    plain = kubectl(kubeconfig, "get", "no").stdout.splitlines()[0].split()
    assert plain == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]  # -o wide's columns hidden


def test_short_names_list_every_kind_across_namespaces(kubeconfig: Path):
    shown = kubectl(kubeconfig, "get", "po,svc,ns,netpol,cm,ev,pv,pvc", "-A").stdout
    assert "namespace/gpu-dev " in shown
    assert "namespace/kube-system " in shown


def test_api_resources_lists_short_names_and_verbs(kubeconfig: Path):
    wide = kubectl(kubeconfig, "api-resources", "-o", "wide").stdout
    rows = {line.split()[0]: line.split() for line in wide.splitlines()[1:]}
    assert rows["pods"][1] == "po"
    assert rows["networkpolicies"][1:3] == ["netpol", "networking.k8s.io/v1"]
    assert rows["pods"][-2:] == ["create,delete,deletecollection,get,list,patch,update", "all"]


def test_explain_reads_the_openapi_schema(kubeconfig: Path):
    explained = kubectl(kubeconfig, "explain", "pod.spec").stdout
    assert "KIND:       Pod" in explained
    assert "containers\t<[]Container>" in explained
    policy = kubectl(kubeconfig, "explain", "networkpolicy.spec.egress.to").stdout
    assert "ipBlock\t<IPBlock>" in policy


def test_apply_dry_run_and_diff_write_nothing_then_apply_writes_and_delete_dry_run_keeps(
    kubeconfig: Path, local_cloud: LocalCloud
):
    # The local cloud applied the same files at start, as an operator does once, but not
    # with kubectl: kubectl's apply adds its last-applied annotation, so each is `configured`.
    before = _stored(local_cloud)
    dry = kubectl(kubeconfig, "apply", *FILES, "--dry-run=server").stdout
    assert "networkpolicy.networking.k8s.io/dns configured (server dry run)" in dry
    assert (
        "clusterrole.rbac.authorization.k8s.io/gpu-dev-readers configured (server dry run)" in dry
    )
    assert _stored(local_cloud) == before

    # Differences are exit code 1; an error would be >1.
    diff = kubectl(kubeconfig, "diff", *FILES, check=False)
    assert diff.returncode == 1, diff.stderr
    assert "NetworkPolicy.gpu-dev.dns" in diff.stdout  # the annotation apply would add
    assert _stored(local_cloud) == before

    applied = kubectl(kubeconfig, "apply", *FILES).stdout
    assert "networkpolicy.networking.k8s.io/dns configured" in applied
    assert kubectl(kubeconfig, "diff", *FILES, check=False).returncode == 0  # live = files
    egress = kubectl(kubeconfig, "get", "netpol", "dns", "-n", "gpu-dev", "-o", "json").stdout
    assert json.loads(egress)["spec"]["egress"], "the policy's egress rules are stored"
    again = kubectl(kubeconfig, "apply", *FILES).stdout
    assert "networkpolicy.networking.k8s.io/dns unchanged" in again

    after_apply = _stored(local_cloud)
    deleted = kubectl(kubeconfig, "delete", "netpol", "dns", "-n", "gpu-dev", "--dry-run=server")
    assert "deleted (server dry run)" in deleted.stdout
    kubectl(kubeconfig, "delete", "netpol", "--all", "-n", "gpu-dev", "--dry-run=server")
    assert _stored(local_cloud) == after_apply
    kubectl(kubeconfig, "get", "netpol", "dns", "-n", "gpu-dev")


def test_create_dry_run_is_answered_and_not_stored(kubeconfig: Path, tmp_path: Path):
    manifest = tmp_path / "cm.json"
    manifest.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "dry-only", "namespace": "default"},
                "data": {"a": "b"},
            }
        )
    )
    created = kubectl(kubeconfig, "create", "-f", str(manifest), "--dry-run=server", "-o", "json")
    assert json.loads(created.stdout)["metadata"]["uid"]  # answered as the real create
    missing = kubectl(kubeconfig, "get", "cm", "dry-only", "-n", "default", check=False)
    assert missing.returncode == 1 and "NotFound" in missing.stderr


def test_unknown_fields_are_refused_by_strict_validation_and_only_warned_of_by_warn(
    kubeconfig: Path, tmp_path: Path, local_cloud: LocalCloud
):
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
        "metadata: {name: typo, namespace: default}\nspec: {podSelector: {}, egres: []}\n"
    )
    before = _stored(local_cloud)
    refused = kubectl(kubeconfig, "apply", "-f", str(manifest), check=False)
    assert refused.returncode == 1
    assert 'strict decoding error: unknown field "spec.egres"' in refused.stderr
    assert _stored(local_cloud) == before
    # --validate=warn: stored, and kubectl prints the server's warning.
    warned = kubectl(kubeconfig, "apply", "--validate=warn", "-f", str(manifest))
    assert 'Warning: unknown field "spec.egres"' in warned.stderr
    kubectl(kubeconfig, "delete", "-f", str(manifest))


def test_protobuf_bodies_are_refused_with_415_naming_json(kubeconfig: Path):
    # kubectl's typed `create configmap` sends protobuf, which the stand-in does not read.
    refused = kubectl(
        kubeconfig,
        "create",
        "configmap",
        "typed",
        "--from-literal=a=b",
        "-n",
        "default",
        check=False,
    )
    assert refused.returncode == 1
    assert "unknown format (application/vnd.kubernetes.protobuf)" in refused.stderr
    assert "application/json" in refused.stderr


def _raw(cloud: LocalCloud, method: str, path: str, body: bytes, content_type: str) -> Any:
    """One HTTPS request as the layer's functions make them (EKS token, the cluster CA)."""
    import boto3

    from gpudev.cluster.eks import eks_bearer_token

    assert cloud.kubernetes_certificate is not None
    profiles = configparser.ConfigParser()
    profiles.read(cloud.credentials_file)
    operator = profiles["carol"]  # the kubeconfig's identity: the local operator
    session = boto3.Session(
        aws_access_key_id=operator["aws_access_key_id"],
        aws_secret_access_key=operator["aws_secret_access_key"],
        aws_session_token=operator["aws_session_token"],
    )
    token = eks_bearer_token(session, cloud.cluster_name, "us-east-2")
    request = urllib.request.Request(
        cloud.kubernetes.url + path,  # type: ignore[union-attr]
        data=body,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": content_type},
    )
    context = cloud.kubernetes_certificate.client_context()
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.mark.parametrize(
    ("body", "content_type", "code", "reason"),
    [
        (b'{"metadata": ', "application/json", 400, "BadRequest"),
        (b"\xff\xfe", "application/json", 400, "BadRequest"),
        (b"[1]", "application/json", 400, "BadRequest"),
        (b'{"metadata": "x"}', "application/json", 400, "BadRequest"),
        (b'{"metadata": {"name": "x"}, "data": 7}', "application/json", 400, "BadRequest"),
        (b"k8s\x00", "application/vnd.kubernetes.protobuf", 415, "UnsupportedMediaType"),
        (b"a: b", "application/yaml", 415, "UnsupportedMediaType"),
    ],
)
def test_bad_bodies_get_a_status_not_a_closed_connection(
    local_cloud: LocalCloud, body: bytes, content_type: str, code: int, reason: str
):
    before = _stored(local_cloud)
    status, answer = _raw(
        local_cloud, "POST", "/api/v1/namespaces/default/configmaps", body, content_type
    )
    assert (status, answer["kind"], answer["reason"], answer["code"]) == (
        code,
        "Status",
        reason,
        code,
    )
    assert _stored(local_cloud) == before


def test_plain_http_to_the_https_port_is_told_so(local_cloud: LocalCloud):
    url = local_cloud.kubernetes.url.replace("https://", "http://")  # type: ignore[union-attr]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url + "/api/v1/nodes", timeout=5)
    assert refused.value.code == 400
    assert b"HTTP request to an HTTPS server" in refused.value.read()


def test_the_stand_in_certificate_is_refused_without_the_clusters_ca(local_cloud: LocalCloud):
    with pytest.raises(urllib.error.URLError) as refused:
        urllib.request.urlopen(
            local_cloud.kubernetes.url + "/version",  # type: ignore[union-attr]
            timeout=5,
            context=ssl.create_default_context(),
        )
    assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)


def test_an_operator_describes_a_pod_reads_its_log_and_asks_can_i(
    kubeconfig: Path, tmp_path: Path, local_cloud: LocalCloud
):
    """The issue's operator round: `describe pod` shows the events of its start, `logs`
    what it printed, `auth can-i` what the kubeconfig's identity (the admin) may do."""
    from localcloud.kubernetes.container_logs import STARTUP_SCRIPT, startup_output

    manifest = tmp_path / "pod.json"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "kubectl-round", "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "dev",
                    "image": "pytorch/pytorch:latest",
                    "command": ["/bin/bash", "-c"],
                    "args": [STARTUP_SCRIPT],
                }
            ]
        },
    }
    manifest.write_text(json.dumps(pod))
    kubectl(kubeconfig, "create", "-f", str(manifest))
    try:
        wait_for(
            lambda: (
                '"Running"'
                in kubectl(
                    kubeconfig, "get", "pod", "kubectl-round", "-n", "default", "-o", "json"
                ).stdout
            ),
            message="the pod running",
        )
        described = kubectl(kubeconfig, "describe", "pod", "kubectl-round", "-n", "default")
        for reason in ("Scheduled", "Created", "Started"):
            assert reason in described.stdout.split("Events:")[1], described.stdout
        logs = kubectl(kubeconfig, "logs", "kubectl-round", "-n", "default").stdout
        running = json.loads(
            kubectl(kubeconfig, "get", "pod", "kubectl-round", "-n", "default", "-o", "json").stdout
        )
        started = running["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
        expected = startup_output(pod["spec"]["containers"][0], started)  # type: ignore[index]
        assert logs.splitlines() == list(expected)
        missing = kubectl(
            kubeconfig, "logs", "kubectl-round", "-c", "nope", "-n", "default", check=False
        )
        assert missing.returncode == 1 and "container nope is not valid" in missing.stderr
    finally:
        kubectl(kubeconfig, "delete", "pod", "kubectl-round", "-n", "default", "--wait=false")
    can = kubectl(kubeconfig, "auth", "can-i", "create", "pods", "-n", "gpu-dev", check=False)
    assert can.stdout.strip() == "yes", can
