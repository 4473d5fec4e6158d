"""The stand-in refuses what kube-apiserver refuses, through the official client: 422 Invalid
with the API server's causes for each validation rule, 400 BadRequest for bodies the API
server cannot decode, and nothing written either way. A label value such as an SSO e-mail
(`carol@example.com`) is the production lesson behind this file."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pydantic
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from localcloud.kubernetes.patches import merge_patch

NAMESPACE = "gpu-dev"
SUFFIX = {"pods": "pod", "services": "service", "configmaps": "config_map", "secrets": "secret"}
KIND = {"pods": "Pod", "services": "Service", "configmaps": "ConfigMap", "secrets": "Secret"}


def _valid(resource: str, name: str) -> dict[str, Any]:
    """A valid object of each kind, which each case below breaks in one place."""
    meta = {"name": name, "labels": {"app": "validation"}}
    return {
        "pods": {
            "metadata": meta,
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": "busybox",
                        "env": [{"name": "HOME", "value": "/root"}],
                        "ports": [{"name": "ssh", "containerPort": 22}],
                        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                        "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}},
                    }
                ],
                "volumes": [{"name": "scratch", "emptyDir": {}}],
            },
        },
        "services": {
            "metadata": meta,
            "spec": {"selector": {"app": "validation"}, "ports": [{"name": "ssh", "port": 22}]},
        },
        "configmaps": {"metadata": meta, "data": {"warning": ""}},
        "secrets": {"metadata": meta, "data": {"token": "c2VjcmV0"}},
    }[resource]


def _container(**change: Any) -> dict[str, Any]:
    """The valid pod's container with some fields changed (lists are replaced whole)."""
    container: dict[str, Any] = merge_patch(_valid("pods", "x")["spec"]["containers"][0], change)
    return container


INVALID, REQUIRED, DUPLICATE = "FieldValueInvalid", "FieldValueRequired", "FieldValueDuplicate"
NOT_FOUND, TOO_LONG, UNSUPPORTED = (
    "FieldValueNotFound",
    "FieldValueTooLong",
    "FieldValueNotSupported",
)


def meta(fields: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": fields}


def spec(fields: dict[str, Any]) -> dict[str, Any]:
    return {"spec": fields}


def _containers(**change: Any) -> dict[str, Any]:
    return spec({"containers": [_container(**change)]})


def _gpu(requests: str, limits: str) -> dict[str, Any]:
    return {
        "resources": {
            "requests": {"nvidia.com/gpu": requests},
            "limits": {"nvidia.com/gpu": limits},
        }
    }


LONG = "a" * 64
CASES = [
    # metadata, every kind
    ("pods", meta({"labels": {"gpu-dev/user": "carol@example.com"}}), "metadata.labels", INVALID),
    ("services", meta({"labels": {"user": LONG}}), "metadata.labels", INVALID),
    ("configmaps", meta({"labels": {"a/b/c": "x"}}), "metadata.labels", INVALID),
    ("secrets", meta({"labels": {"Gpu_Dev/user": "x"}}), "metadata.labels", INVALID),
    ("pods", meta({"labels": {"gpu-dev/": "x"}}), "metadata.labels", INVALID),
    ("pods", meta({"labels": {f"{LONG}": "x"}}), "metadata.labels", INVALID),
    ("pods", meta({"annotations": {"bad key": "x"}}), "metadata.annotations", INVALID),
    ("configmaps", meta({"annotations": {"big": "x" * 262144}}), "metadata.annotations", TOO_LONG),
    ("pods", meta({"name": "Gpu_Dev"}), "metadata.name", INVALID),
    ("secrets", meta({"name": "s" * 254}), "metadata.name", INVALID),
    ("configmaps", meta({"name": "..."}), "metadata.name", INVALID),
    ("services", meta({"name": "1-ssh"}), "metadata.name", INVALID),
    ("services", meta({"name": "ssh.example"}), "metadata.name", INVALID),
    ("pods", meta({"name": None}), "metadata.name", REQUIRED),
    ("configmaps", meta({"name": None, "generateName": "Bad_"}), "metadata.generateName", INVALID),
    # pods
    ("pods", spec({"containers": None}), "spec.containers", REQUIRED),
    ("pods", _containers(name="Main"), "spec.containers[0].name", INVALID),
    (
        "pods",
        spec({"containers": [_container(), _container()]}),
        "spec.containers[1].name",
        DUPLICATE,
    ),
    ("pods", _containers(image=None), "spec.containers[0].image", REQUIRED),
    (
        "pods",
        _containers(env=[{"name": "1ST", "value": "x"}]),
        "spec.containers[0].env[0].name",
        INVALID,
    ),
    (
        "pods",
        _containers(env=[{"name": "A B", "value": "x"}]),
        "spec.containers[0].env[0].name",
        INVALID,
    ),
    (
        "pods",
        _containers(ports=[{"containerPort": 70000}]),
        "spec.containers[0].ports[0].containerPort",
        INVALID,
    ),
    (
        "pods",
        _containers(ports=[{"containerPort": 0}]),
        "spec.containers[0].ports[0].containerPort",
        REQUIRED,
    ),
    (
        "pods",
        _containers(ports=[{"name": "SSH", "containerPort": 22}]),
        "spec.containers[0].ports[0].name",
        INVALID,
    ),
    (
        "pods",
        spec({"volumes": [{"name": "Scratch", "emptyDir": {}}]}),
        "spec.volumes[0].name",
        INVALID,
    ),
    (
        "pods",
        spec({"volumes": [{"name": "scratch", "emptyDir": {}}] * 2}),
        "spec.volumes[1].name",
        DUPLICATE,
    ),
    ("pods", spec({"volumes": [{"name": "scratch"}]}), "spec.volumes[0]", REQUIRED),
    ("pods", spec({"volumes": None}), "spec.containers[0].volumeMounts[0].name", NOT_FOUND),
    (
        "pods",
        _containers(resources={"requests": {"cpu": "3"}}),
        "spec.containers[0].resources.requests",
        INVALID,
    ),
    (
        "pods",
        _containers(resources={"requests": {"memory": "9Gi"}, "limits": {"memory": "8Gi"}}),
        "spec.containers[0].resources.requests",
        INVALID,
    ),
    (
        "pods",
        _containers(**_gpu("0.5", "0.5")),
        "spec.containers[0].resources.limits[nvidia.com/gpu]",
        INVALID,
    ),
    ("pods", _containers(**_gpu("1", "2")), "spec.containers[0].resources.requests", INVALID),
    (
        "pods",
        _containers(resources={"requests": {"nvidia.com/gpu": "1"}}),
        "spec.containers[0].resources.limits",
        REQUIRED,
    ),
    (
        "pods",
        _containers(resources={"limits": {"cpu": "-1"}}),
        "spec.containers[0].resources.limits[cpu]",
        INVALID,
    ),
    ("pods", spec({"hostname": "Gpu_Dev"}), "spec.hostname", INVALID),
    ("pods", spec({"subdomain": "a.b"}), "spec.subdomain", INVALID),
    ("pods", spec({"restartPolicy": "Sometimes"}), "spec.restartPolicy", UNSUPPORTED),
    ("pods", spec({"nodeSelector": {"GpuType": "h100 sxm"}}), "spec.nodeSelector", INVALID),
    # services
    ("services", spec({"ports": [{"name": "ssh", "port": 70000}]}), "spec.ports[0].port", INVALID),
    ("services", spec({"ports": [{"name": "ssh", "port": 0}]}), "spec.ports[0].port", INVALID),
    ("services", spec({"ports": [{"name": "SSH", "port": 22}]}), "spec.ports[0].name", INVALID),
    (
        "services",
        spec({"ports": [{"name": "ssh", "port": 22}, {"port": 8888}]}),
        "spec.ports[1].name",
        REQUIRED,
    ),
    (
        "services",
        spec({"ports": [{"name": "ssh", "port": 22}, {"name": "ssh", "port": 23}]}),
        "spec.ports[1].name",
        DUPLICATE,
    ),
    (
        "services",
        spec({"ports": [{"name": "ssh", "port": 22, "targetPort": "SSH"}]}),
        "spec.ports[0].targetPort",
        INVALID,
    ),
    ("services", spec({"ports": None}), "spec.ports", REQUIRED),
    ("services", spec({"type": "Nodeport"}), "spec.type", UNSUPPORTED),
    (
        "services",
        spec({"selector": {"gpu-dev/user": "carol@example.com"}}),
        "spec.selector",
        INVALID,
    ),
    # config maps and secrets
    ("configmaps", {"data": {"bad key": "x"}}, "data[bad key]", INVALID),
    ("configmaps", {"data": {"..": "x"}}, "data[..]", INVALID),
    ("configmaps", {"data": {"k": "x"}, "binaryData": {"k": "eA=="}}, "binaryData[k]", INVALID),
    ("configmaps", {"data": {"k": "x" * (1024 * 1024 + 1)}}, "", TOO_LONG),
    ("secrets", {"data": {"ssh/keys": "eA=="}}, "data[ssh/keys]", INVALID),
    (
        "secrets",
        {"stringData": {"authorized keys": "ssh-ed25519 AAAA"}},
        "data[authorized keys]",
        INVALID,
    ),
    ("secrets", {"stringData": {"big": "x" * (1024 * 1024 + 1)}}, "data", TOO_LONG),
]


def _call(core: client.CoreV1Api, verb: str, resource: str, *args: Any) -> Any:
    return getattr(core, f"{verb}_namespaced_{SUFFIX[resource]}")(*args)


def _create(core: client.CoreV1Api, resource: str, body: dict[str, Any]) -> Any:
    try:
        return _call(core, "create", resource, NAMESPACE, body)
    except pydantic.ValidationError:
        pass
    # Client 37 refuses some missing required fields itself (pydantic); the API server must
    # refuse them too, so send the body on the client's own request path without that check.
    api = core.api_client
    request = api.param_serialize(
        method="POST",
        resource_path=f"/api/v1/namespaces/{{namespace}}/{resource}",
        path_params={"namespace": NAMESPACE},
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(*request)
    response.read()
    return api.response_deserialize(response, {"201": f"V1{KIND[resource]}"}).data


def _names(core: client.CoreV1Api, resource: str) -> set[str]:
    return {item.metadata.name for item in _call(core, "list", resource, NAMESPACE).items}


def _refused(error: pytest.ExceptionInfo[ApiException], code: int) -> dict[str, Any]:
    assert error.value.status == code, error.value.body
    status: dict[str, Any] = json.loads(error.value.body)
    assert status["kind"] == "Status" and status["code"] == code
    return status


@pytest.mark.parametrize(
    ("resource", "change", "field", "reason"),
    [pytest.param(*case, id=f"{case[0]}-{case[2]}-{i}") for i, case in enumerate(CASES)],
)
def test_an_invalid_object_is_refused_with_the_api_servers_causes_and_not_stored(
    core: client.CoreV1Api, resource: str, change: dict[str, Any], field: str, reason: str
):
    body = merge_patch(_valid(resource, f"v-{uuid.uuid4().hex[:8]}"), change)
    before = _names(core, resource)
    with pytest.raises(ApiException) as refused:
        _create(core, resource, body)
    status = _refused(refused, 422)
    # as the API server does, the store names the object from generateName before validating
    name = body["metadata"].get("name") or body["metadata"].get("generateName", "")
    assert status["reason"] == "Invalid"
    assert status["message"].startswith(f'{KIND[resource]} "{name}')
    assert " is invalid: " in status["message"]
    assert status["details"]["kind"] == KIND[resource]
    causes = status["details"]["causes"]
    assert (field, reason) in [(c["field"], c["reason"]) for c in causes], causes
    assert all(
        c["message"] and f"{c['field']}: {c['message']}" in status["message"] for c in causes
    )
    assert _names(core, resource) == before


def test_an_sso_email_label_is_refused_with_the_api_servers_message(core: client.CoreV1Api):
    body = merge_patch(
        _valid("pods", "sso-label"), {"metadata": {"labels": {"gpu-dev/user": "carol@example.com"}}}
    )
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod(NAMESPACE, body)
    assert _refused(refused, 422)["message"] == (
        'Pod "sso-label" is invalid: metadata.labels: Invalid value: "carol@example.com": a valid '
        "label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  "
        "or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )


def test_a_namespace_name_must_be_a_dns_label(core: client.CoreV1Api):
    with pytest.raises(ApiException) as refused:
        core.create_namespace({"metadata": {"name": "gpu.dev"}})
    status = _refused(refused, 422)
    assert [c["field"] for c in status["details"]["causes"]] == ["metadata.name"]
    assert "gpu.dev" not in {n.metadata.name for n in core.list_namespace().items}


@pytest.mark.parametrize(
    ("resource", "change", "message"),
    [
        pytest.param(
            "secrets",
            {"data": {"token": "carol@example.com"}},
            'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input '
            "byte 5",
            id="secret-data-not-base64",
        ),
        pytest.param(
            "configmaps",
            {"binaryData": {"blob": "not base64!"}},
            'ConfigMap in version "v1" cannot be handled as a ConfigMap: illegal base64 data at '
            "input byte 3",
            id="binary-data-not-base64",
        ),
        pytest.param(
            "pods",
            {"spec": {"containers": [_container(resources={"limits": {"memory": "8GB"}})]}},
            'Pod in version "v1" cannot be handled as a Pod: quantities must match the regular '
            "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
            id="quantity-unparsable",
        ),
        pytest.param(
            "pods",
            {"spec": {"containers": [_container(resources={"limits": {"memory": "8GGi"}})]}},
            'Pod in version "v1" cannot be handled as a Pod: unable to parse quantity\'s suffix',
            id="quantity-bad-suffix",
        ),
        pytest.param(
            "pods",
            {"spec": {"volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1.2.3"}}]}},
            'Pod in version "v1" cannot be handled as a Pod: unable to parse numeric part of '
            "quantity",
            id="size-limit-unparsable",
        ),
    ],
)
def test_a_body_the_api_server_cannot_decode_is_a_bad_request_and_not_stored(
    core: client.CoreV1Api, resource: str, change: dict[str, Any], message: str
):
    body = merge_patch(_valid(resource, f"v-{uuid.uuid4().hex[:8]}"), change)
    before = _names(core, resource)
    with pytest.raises(ApiException) as refused:
        _call(core, "create", resource, NAMESPACE, body)
    status = _refused(refused, 400)
    assert (status["reason"], status["message"]) == ("BadRequest", message)
    assert _names(core, resource) == before


def test_valid_edge_cases_are_accepted(core: client.CoreV1Api):
    run = uuid.uuid4().hex[:8]
    labels = {
        "gpu-dev/user": "carol-example.com",
        "example.com/Max_Value.63": "v" * 63,
        "empty": "",
        "A.b-c_D": "1",
    }
    pod = merge_patch(
        _valid("pods", f"edge-{run}"),
        {
            "metadata": {
                "labels": labels,
                "annotations": {"gpu-dev/note": "carol@example.com", "Kubernetes.io/X": "y"},
            },
            "spec": {
                "hostname": "h" * 63,
                "subdomain": f"edge-{run}",
                "restartPolicy": "OnFailure",
                "nodeSelector": {"GpuType": "none"},  # stays Pending: takes no GPU from others
                "containers": [
                    _container(
                        env=[{"name": n, "value": "1"} for n in ("my.env-name", "_X", "-a.b")],
                        resources={
                            "requests": {"cpu": "500m", "memory": "1e3", "nvidia.com/gpu": "2"},
                            "limits": {"cpu": "1.5", "memory": "8Gi", "nvidia.com/gpu": "2"},
                        },
                    )
                ],
                "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "8Gi"}}],
            },
        },
    )
    created = core.create_namespaced_pod(NAMESPACE, pod)
    assert created.metadata.labels == {"app": "validation", **labels}
    service = core.create_namespaced_service(
        NAMESPACE,
        {
            "metadata": {"name": f"e{run}"[:63]},
            "spec": {"clusterIP": "None", "ports": [{"port": 29500}]},
        },
    )
    assert service.spec.ports[0].name is None
    config_map = core.create_namespaced_config_map(
        NAMESPACE,
        {
            "metadata": {"generateName": "edge-"},
            "data": {"key.name": "", "KEY_NAME": "", "-._": ""},
            "binaryData": {"blob": "AAEC"},
        },
    )
    assert config_map.metadata.name.startswith("edge-")
    secret = core.create_namespaced_secret(
        NAMESPACE,
        {
            "metadata": {"name": f"edge-{run}.keys"},
            "data": {"a": "YQ==", "b": "Yg=="},
            "stringData": {"b": "from stringData", "jupyter_token": ""},
        },
    )
    assert secret.data == {"a": "YQ==", "b": "ZnJvbSBzdHJpbmdEYXRh", "jupyter_token": ""}
    assert secret.string_data is None
    core.delete_namespaced_pod(f"edge-{run}", NAMESPACE)
    core.delete_namespaced_service(f"e{run}", NAMESPACE)
    core.delete_namespaced_config_map(config_map.metadata.name, NAMESPACE)
    core.delete_namespaced_secret(f"edge-{run}.keys", NAMESPACE)


@pytest.mark.parametrize("verb", ["replace", "patch"])
def test_an_invalid_update_is_refused_and_the_object_is_unchanged(
    core: client.CoreV1Api, verb: str
):
    name = f"update-{verb}-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_config_map(NAMESPACE, _valid("configmaps", name))
    before = core.read_namespaced_config_map(name, NAMESPACE)
    bad = {"metadata": {"labels": {"gpu-dev/user": "carol@example.com"}}, "data": {"a b": "1"}}
    body = merge_patch(_valid("configmaps", name), bad) if verb == "replace" else bad
    with pytest.raises(ApiException) as refused:
        _call(core, verb, "configmaps", name, NAMESPACE, body)
    status = _refused(refused, 422)
    assert {c["field"] for c in status["details"]["causes"]} == {"metadata.labels", "data[a b]"}
    assert status["details"]["name"] == name
    after = core.read_namespaced_config_map(name, NAMESPACE)
    assert after.to_dict() == before.to_dict()
    core.delete_namespaced_config_map(name, NAMESPACE)


@pytest.mark.parametrize("verb", ["replace", "patch"])
def test_a_name_cannot_change_on_update(core: client.CoreV1Api, verb: str):
    name = f"rename-{verb}-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_secret(NAMESPACE, _valid("secrets", name))
    body = merge_patch(_valid("secrets", name), {"metadata": {"name": f"{name}-new"}})
    with pytest.raises(ApiException) as refused:
        _call(core, verb, "secrets", name, NAMESPACE, body)
    status = _refused(refused, 400)
    assert status["message"] == (
        f"the name of the object ({name}-new) does not match the name on the URL ({name})"
    )
    assert f"{name}-new" not in _names(core, "secrets")
    core.delete_namespaced_secret(name, NAMESPACE)


def test_a_replaced_secret_merges_string_data_and_a_status_write_is_not_validated(
    core: client.CoreV1Api,
):
    name = f"keys-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_secret(NAMESPACE, _valid("secrets", name))
    replaced = core.replace_namespaced_secret(
        name, NAMESPACE, {"metadata": {"name": name}, "stringData": {"authorized_keys": "k"}}
    )
    assert replaced.data == {"authorized_keys": "aw=="}
    pod = f"status-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(NAMESPACE, _valid("pods", pod))
    # A status write only replaces status: metadata and spec in its body are ignored.
    core.patch_namespaced_pod_status(
        pod, NAMESPACE, {"metadata": {"labels": {"x": "a@b"}}, "status": {"message": "ok"}}
    )
    assert core.read_namespaced_pod(pod, NAMESPACE).status.message == "ok"
    core.delete_namespaced_pod(pod, NAMESPACE)
    core.delete_namespaced_secret(name, NAMESPACE)
