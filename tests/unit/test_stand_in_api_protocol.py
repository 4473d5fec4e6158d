"""The stand-in's API protocol as kube-apiserver speaks it to kubectl (issue #31 item 3):
request bodies by content type, dryRun, strategic merge patch, discovery, tables and
OpenAPI with strict field validation. Pure functions; the e2e tier drives them with kubectl
(tests/e2e/test_kubectl.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from localcloud.http import RawRequest
from localcloud.kubernetes import discovery, dry_run, openapi, request_body, tables
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.store import ObjectStore
from localcloud.kubernetes.strategic_merge import strategic_merge
from tests.support.kubernetes import auth_headers, stand_in_server

JSON = {"Content-Type": "application/json"}


def _refused(call: Any) -> ApiError:
    with pytest.raises(ApiError) as refused:
        call()
    return refused.value


@pytest.mark.parametrize(
    ("method", "content_type", "body", "code"),
    [
        ("POST", "application/json", b'{"metadata": ', 400),
        ("POST", "application/json", b"\xff\xfe", 400),
        ("POST", "application/json", b"[]", 400),
        ("PUT", "application/json", b'"text"', 400),
        ("POST", "application/vnd.kubernetes.protobuf", b"k8s\x00", 415),
        ("POST", "application/yaml", b"a: b", 415),
        ("PATCH", "application/json", b"{}", 415),
        ("PATCH", "application/apply-patch+yaml", b"a: b", 415),
        ("PATCH", "", b"{}", 415),
        ("PATCH", "application/json-patch+json", b'{"a": 1}', 400),
        ("PATCH", "application/merge-patch+json", b"[]", 400),
        ("PATCH", "application/strategic-merge-patch+json", b"[]", 400),
        ("PATCH", "application/merge-patch+json", b"{", 400),
        ("POST", "application/json", b'{"metadata": "x"}', 400),
        ("PATCH", "application/merge-patch+json", b'{"metadata": []}', 400),
    ],
)
def test_bodies_kube_apiserver_cannot_read_are_a_status_with_its_code(
    method: str, content_type: str, body: bytes, code: int
):
    error = _refused(lambda: request_body.decode(method, {"content-type": content_type}, body))
    assert error.code == code
    status = error.status()
    assert status["reason"] == ("BadRequest" if code == 400 else "UnsupportedMediaType")
    if code == 415:
        assert "accepted media types include: application/" in status["message"]


def test_readable_bodies_decode_with_their_patch_type():
    assert request_body.decode("POST", JSON, b'{"a": 1}') == request_body.Body({"a": 1})
    assert request_body.decode("POST", {}, b"{}").value == {}  # no Content-Type: JSON
    assert request_body.decode("DELETE", JSON, b"").value is None
    merge = {"Content-Type": "application/strategic-merge-patch+json; charset=utf-8"}
    assert request_body.decode("PATCH", merge, b"{}").patch_type == "strategic"
    ops = {"Content-Type": "application/json-patch+json"}
    assert request_body.decode("PATCH", ops, b"[]").patch_type == "json"


def test_dry_run_is_asked_in_the_query_or_a_delete_options_body():
    assert dry_run.requested("POST", {"dryRun": "All"}, None)
    assert dry_run.requested("DELETE", {}, {"kind": "DeleteOptions", "dryRun": ["All"]})
    assert not dry_run.requested("DELETE", {}, {"gracePeriodSeconds": 0})
    assert not dry_run.requested("PATCH", {}, {"dryRun": ["All"]})  # a patch's body is the patch
    assert not dry_run.requested("GET", {"dryRun": "All"}, None)
    assert _refused(lambda: dry_run.requested("POST", {"dryRun": "Some"}, None)).code == 400


def test_what_a_dry_run_writes_is_rolled_back_before_anyone_sees_it():
    store = ObjectStore()
    before = store.list("namespaces", None)["items"]
    with dry_run.maybe(store, True):
        store.create("namespaces", "", {"metadata": {"name": "dry"}})
        store.delete("namespaces", "", "default")
        assert store.get("namespaces", "", "dry")
    assert store.list("namespaces", None)["items"] == before
    with dry_run.maybe(store, False):
        store.create("namespaces", "", {"metadata": {"name": "real"}})
    assert store.get("namespaces", "", "real")


def test_a_dry_run_service_takes_no_cluster_ip_from_the_allocator():
    store = ObjectStore()
    service = {"metadata": {"name": "ssh"}, "spec": {"ports": [{"port": 22}]}}
    with dry_run.maybe(store, True):
        dry = store.create("services", "gpu-dev", service)["spec"]["clusterIP"]
    real = store.create("services", "gpu-dev", service)["spec"]["clusterIP"]
    assert real == dry  # the dry run's address was never taken
    other = {"metadata": {"name": "other"}, "spec": {"ports": [{"port": 22}]}}
    assert store.create("services", "gpu-dev", other)["spec"]["clusterIP"] != real


def test_a_dry_runs_answer_carries_the_stored_version_and_a_created_object_none():
    store = ObjectStore()
    stored = store.get("namespaces", "", "default")["metadata"]["resourceVersion"]
    with dry_run.maybe(store, True):
        created = store.create("namespaces", "", {"metadata": {"name": "dry"}})
        changed = store.patch("namespaces", "", "default", {"metadata": {"labels": {"a": "b"}}})
    dry_run.keep_versions(store, "namespaces", created)
    dry_run.keep_versions(store, "namespaces", {"items": [changed]})
    assert "resourceVersion" not in created["metadata"]
    assert changed["metadata"]["resourceVersion"] == stored
    assert changed["metadata"]["labels"]["a"] == "b"  # answered as the real patch would be


def test_a_failed_dry_run_leaves_the_store_as_it_was():
    store = ObjectStore()
    before = store.list("namespaces", None)["items"]
    with pytest.raises(ApiError), dry_run.maybe(store, True):
        store.create("namespaces", "", {"metadata": {"name": "half"}})
        store.create("namespaces", "", {"metadata": {"name": "half"}})  # 409
    assert store.list("namespaces", None)["items"] == before


def test_strategic_merge_merges_keyed_lists_element_by_element():
    pod = {
        "metadata": {"finalizers": ["a"], "labels": {"x": "1"}},
        "spec": {
            "containers": [
                {"name": "main", "image": "old", "ports": [{"containerPort": 22}]},
                {"name": "side", "image": "s"},
            ],
            "tolerations": [{"key": "a"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "X"}]},
    }
    patch = {
        "metadata": {"finalizers": ["b", "a"], "labels": {"x": None}},
        "spec": {
            "$setElementOrder/containers": [{"name": "main"}, {"name": "side"}],
            "containers": [{"name": "main", "image": "new"}, {"name": "side", "$patch": "delete"}],
            "tolerations": [{"key": "b"}],  # no merge key: replaced
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    merged = strategic_merge(pod, patch)
    assert merged["metadata"] == {"finalizers": ["a", "b"], "labels": {}}
    assert merged["spec"]["containers"] == [
        {"name": "main", "image": "new", "ports": [{"containerPort": 22}]}
    ]
    assert merged["spec"]["tolerations"] == [{"key": "b"}]
    assert merged["status"]["conditions"] == [{"type": "Ready", "status": "True"}, {"type": "X"}]
    assert pod["spec"]["containers"][0]["image"] == "old"  # the target is not changed


def test_strategic_merge_directives_replace_retain_and_delete():
    current = {"spec": {"a": 1, "b": 2, "keep": {"x": 1}, "gone": {"y": 1}, "list": ["p", "q"]}}
    patch = {
        "spec": {
            "$retainKeys": ["a", "keep", "list"],
            "a": 3,
            "keep": {"$patch": "replace", "z": 2},
            "gone": {"$patch": "delete"},
            "$deleteFromPrimitiveList/list": ["p"],
        }
    }
    assert strategic_merge(current, patch) == {"spec": {"a": 3, "keep": {"z": 2}, "list": ["q"]}}


def test_discovery_comes_from_the_kinds_with_kube_apiservers_names():
    core = discovery.answer("/api/v1/")
    assert core is not None and core["groupVersion"] == "v1"
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert (pods["shortNames"], pods["singularName"], pods["categories"]) == (
        ["po"],
        "pod",
        ["all"],
    )
    assert {"pods/status", "pods/binding"} <= {r["name"] for r in core["resources"]}
    names = {r["name"]: r for r in core["resources"]}
    assert names["secrets"].get("shortNames") is None  # kube-apiserver gives secrets none
    groups = discovery.answer("/apis")
    assert groups is not None
    assert [g["name"] for g in groups["groups"]] == [
        "networking.k8s.io",
        "apps",
        "rbac.authorization.k8s.io",
        "authorization.k8s.io",
    ]
    assert discovery.answer("/apis/networking.k8s.io/v1")["resources"][0]["shortNames"] == [  # type: ignore[index]
        "netpol"
    ]
    assert discovery.answer("/apis/nothing.example.com") is None
    assert discovery.answer("/api/v1/pods") is None  # not discovery: a resource


def test_tables_are_asked_for_by_the_first_accepted_type():
    assert tables.wants_table(
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
        "g=meta.k8s.io,application/json"
    )
    assert not tables.wants_table("application/json")
    assert not tables.wants_table("application/json, application/json;as=Table;v=v1;g=meta.k8s.io")


def test_a_pod_row_has_kube_apiservers_columns():
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "gpu-dev",
            "creationTimestamp": "2020-01-01T00:00:00Z",
        },
        "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.5",
            "containerStatuses": [
                {"ready": True, "restartCount": 2, "state": {"running": {}}},
                {
                    "ready": False,
                    "restartCount": 1,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                },
            ],
        },
    }
    table = tables.table("pods", {"metadata": {"resourceVersion": "9"}, "items": [pod]}, None)
    assert [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
    ]
    row = table["rows"][0]
    assert row["cells"][:4] == ["p", "1/2", "CrashLoopBackOff", "3"]
    assert row["cells"][5:7] == ["10.0.0.5", "n1"]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["metadata"]["namespace"] == "gpu-dev"
    assert "object" not in tables.table("pods", pod, "None")["rows"][0]
    assert _refused(lambda: tables.table("pods", pod, "Everything")).code == 400


def test_a_kind_without_a_printer_gets_the_default_table():
    role = {"metadata": {"name": "r", "creationTimestamp": "2026-01-01T00:00:00Z"}}
    table = tables.table("roles", {"items": [role], "metadata": {}}, "Object")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Created At"]
    assert table["rows"][0] == {"cells": ["r", "2026-01-01T00:00:00Z"], "object": role}


def test_openapi_v3_lists_each_group_and_declares_field_validation_on_patch():
    root = openapi.answer("/openapi/v3")
    assert root is not None and set(root["paths"]) == {
        "api/v1",
        "apis/networking.k8s.io/v1",
        "apis/apps/v1",
        "apis/rbac.authorization.k8s.io/v1",
        "apis/authorization.k8s.io/v1",
    }
    document = openapi.answer("/openapi/v3/apis/networking.k8s.io/v1")
    assert document is not None
    item = document["paths"][
        "/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies/{name}"
    ]
    parameters = {p["name"] for p in item["patch"]["parameters"]}
    assert "fieldValidation" in parameters  # kubectl then validates on the server
    assert item["patch"]["x-kubernetes-group-version-kind"]["kind"] == "NetworkPolicy"
    schemas = document["components"]["schemas"]
    policy = schemas["io.k8s.api.networking.v1.NetworkPolicy"]
    assert policy["x-kubernetes-group-version-kind"] == [
        {"group": "networking.k8s.io", "version": "v1", "kind": "NetworkPolicy"}
    ]
    core = openapi.answer("/openapi/v3/api/v1")
    assert core is not None
    spec = core["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]
    assert spec["properties"]["containers"]["x-kubernetes-patch-merge-key"] == "name"
    assert openapi.answer("/openapi/v2") is None  # not served: kubectl validates on the server


def _strict(method: str, resource: str, body: Any, directive: str = "Strict") -> list[str]:
    return openapi.check_fields(
        method, resource, request_body.Body(body), {"fieldValidation": directive}
    )


def test_strict_field_validation_refuses_fields_a_closed_schema_lacks():
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "p", "labelz": {}},
        "spec": {
            "podSelector": {},
            "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "exept": []}}]}],
        },
    }
    error = _refused(lambda: _strict("POST", "networkpolicies", policy))
    assert error.code == 400
    assert 'unknown field "metadata.labelz"' in error.message
    assert 'unknown field "spec.egress[0].to[0].ipBlock.exept"' in error.message
    assert _strict("POST", "networkpolicies", policy, "Ignore") == []  # not checked
    assert _strict("POST", "networkpolicies", policy, "Warn") == [
        'unknown field "metadata.labelz"',
        'unknown field "spec.egress[0].to[0].ipBlock.exept"',
    ]
    # An open schema (the pod spec is described in part) lets what it does not describe pass.
    _strict("POST", "pods", {"metadata": {"name": "p"}, "spec": {"overhead": {}}})
    assert _refused(lambda: _strict("POST", "pods", {}, "Loose")).code == 400


def test_a_kind_added_to_the_registry_in_a_new_group_is_discovered_and_documented(
    monkeypatch: pytest.MonkeyPatch,
):
    """Other modules add kinds (RBAC, authorization): discovery and OpenAPI follow KINDS."""
    from localcloud.kubernetes import resources

    served = resources.api_version
    monkeypatch.setitem(resources.KINDS, "roles", ("Role", True))
    monkeypatch.setitem(
        resources.KINDS, "selfsubjectaccessreviews", ("SelfSubjectAccessReview", False)
    )
    groups = {
        "roles": "rbac.authorization.k8s.io/v1",
        "selfsubjectaccessreviews": "authorization.k8s.io/v1",
    }

    def api_version(resource: str) -> str:
        return groups.get(resource) or served(resource)

    for module in (discovery, openapi):
        monkeypatch.setattr(module, "api_version", api_version)
    listed = discovery.answer("/apis")
    assert listed is not None
    assert [g["name"] for g in listed["groups"]] == [
        "networking.k8s.io",
        "apps",
        "rbac.authorization.k8s.io",
        "authorization.k8s.io",
    ]
    roles = discovery.answer("/apis/rbac.authorization.k8s.io/v1")
    assert roles is not None
    assert roles["resources"][0] | {"verbs": []} == {
        "name": "roles",
        "singularName": "role",
        "namespaced": True,
        "kind": "Role",
        "verbs": [],
    }
    reviews = discovery.answer("/apis/authorization.k8s.io/v1")
    assert reviews is not None and reviews["resources"][0]["verbs"] == ["create"]
    root = openapi.answer("/openapi/v3")
    assert root is not None and "apis/rbac.authorization.k8s.io/v1" in root["paths"]
    document = openapi.answer("/openapi/v3/apis/rbac.authorization.k8s.io/v1")
    assert document is not None
    role = document["components"]["schemas"]["io.k8s.api.rbac.v1.Role"]
    # described (closed): a rule's lists are typed, as the escalation check needs
    assert "x-kubernetes-preserve-unknown-fields" not in role
    assert role["properties"]["rules"]["items"]["$ref"].endswith("io.k8s.api.rbac.v1.PolicyRule")


@pytest.mark.parametrize(
    ("resource", "body", "where"),
    [
        ("configmaps", {"metadata": {"name": "c"}, "data": 7}, "data: expected map"),
        ("configmaps", {"metadata": {"name": "c"}, "data": {"a": 1}}, "data.a: expected string"),
        ("configmaps", {"metadata": {"name": "c", "labels": []}}, "metadata.labels: expected map"),
        (
            "pods",
            {"metadata": {"name": "p"}, "spec": {"containers": {}}},
            "spec.containers: expected a list",
        ),
        (
            "pods",
            {"metadata": {"name": "p"}, "spec": {"containers": [{"name": 1}]}},
            "spec.containers[0].name: expected string",
        ),
        (
            "networkpolicies",
            {"metadata": {"name": "n"}, "spec": {"podSelector": "all"}},
            "spec.podSelector: expected an object",
        ),
    ],
)
def test_described_fields_of_the_wrong_json_type_are_400_whatever_the_validation_directive(
    resource: str, body: Any, where: str
):
    error = _refused(lambda: openapi.check_types("POST", resource, request_body.Body(body)))
    assert error.code == 400 and where in error.message


def test_fields_of_the_right_type_and_nulls_pass_the_type_check():
    openapi.check_types(
        "PATCH",
        "pods",
        request_body.Body(
            {"metadata": {"labels": {"a": None}}, "spec": {"nodeSelector": None}}, "merge"
        ),
    )
    openapi.check_types(
        "POST",
        "networkpolicies",
        request_body.Body({"spec": {"ingress": [{"ports": [{"port": "ssh"}, {"port": 22}]}]}}),
    )


def _service(name: str, cluster_ip: str | None = None) -> dict:
    spec: dict = {"ports": [{"port": 22}]}
    if cluster_ip is not None:
        spec["clusterIP"] = cluster_ip
    return {"metadata": {"name": name}, "spec": spec}


def test_a_requested_cluster_ip_in_the_service_range_is_kept():
    store = ObjectStore()
    spec = store.create("services", "gpu-dev", _service("dns", "10.100.0.10"))["spec"]
    assert (spec["clusterIP"], spec["clusterIPs"]) == ("10.100.0.10", ["10.100.0.10"])
    # the allocator steps around it
    assert store.create("services", "gpu-dev", _service("a"))["spec"]["clusterIP"] != "10.100.0.10"


def test_a_headless_service_keeps_none():
    spec = ObjectStore().create("services", "gpu-dev", _service("ssh", "None"))["spec"]
    assert (spec["clusterIP"], spec["clusterIPs"]) == ("None", ["None"])


def test_a_cluster_ip_requested_through_cluster_ips_alone_is_kept():
    spec = {"clusterIPs": ["10.100.3.3"], "ports": [{"port": 53}]}
    service = {"metadata": {"name": "dns"}, "spec": spec}
    assert ObjectStore().create("services", "gpu-dev", service)["spec"]["clusterIP"] == "10.100.3.3"


def test_a_cluster_ip_already_held_is_refused_with_the_allocators_words():
    store = ObjectStore()
    store.create("services", "gpu-dev", _service("dns", "10.100.0.10"))
    with pytest.raises(ApiError) as refused:
        store.create("services", "gpu-dev", _service("other", "10.100.0.10"))
    assert (refused.value.code, refused.value.reason) == (422, "Invalid")
    assert refused.value.message == (
        'Service "other" is invalid: spec.clusterIPs: Invalid value: []string{"10.100.0.10"}: '
        "failed to allocate IP 10.100.0.10: provided IP is already allocated"
    )
    assert refused.value.causes == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: []string{"10.100.0.10"}: failed to allocate IP '
            "10.100.0.10: provided IP is already allocated",
            "field": "spec.clusterIPs",
        }
    ]
    assert [s["metadata"]["name"] for s in store.list("services", "gpu-dev")["items"]] == ["dns"]


@pytest.mark.parametrize("address", ["1.1.1.1", "10.101.0.1", "10.100.0.0", "10.100.255.255"])
def test_a_cluster_ip_outside_the_service_range_is_refused(address: str):
    with pytest.raises(ApiError) as refused:
        ObjectStore().create("services", "gpu-dev", _service("dns", address))
    assert refused.value.code == 422
    assert refused.value.message.endswith(
        f"failed to allocate IP {address}: the provided IP ({address}) is not in the valid "
        "range. The range of valid IPs is 10.100.0.0/16"
    )


def test_a_cluster_ip_that_is_no_address_is_refused():
    with pytest.raises(ApiError) as refused:
        ObjectStore().create("services", "gpu-dev", _service("dns", "10.100.0.300"))
    assert refused.value.code == 422
    assert refused.value.message == (
        'Service "dns" is invalid: spec.clusterIPs[0]: Invalid value: "10.100.0.300": '
        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
    )


@pytest.mark.parametrize("query", [{}, {"fieldValidation": ""}])
def test_without_a_directive_unknown_fields_are_warnings_as_kube_apiservers_default(
    query: dict[str, str],
):
    config_map = {"metadata": {"name": "c", "labelz": {}}, "data": {}, "dataz": {}}
    warnings = openapi.check_fields("POST", "configmaps", request_body.Body(config_map), query)
    assert warnings == ['unknown field "metadata.labelz"', 'unknown field "dataz"']


def test_a_write_without_a_directive_answers_its_unknown_fields_as_warning_headers():
    server = stand_in_server(ObjectStore(), "test")
    body = json.dumps({"metadata": {"name": "c"}, "data": {}, "dataz": {}}).encode()
    headers = auth_headers("test") | JSON
    status, answer_headers, _ = server._handle(
        RawRequest("POST", "/api/v1/namespaces/default/configmaps", headers, body, "127.0.0.1")
    )
    assert status == 201
    assert answer_headers["Warning"] == '299 - "unknown field \\"dataz\\""'


def _length_delimited(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128  # one-byte lengths are enough here
    return bytes([number << 3 | 2, len(payload)]) + payload


def _protobuf(api_version: str, kind: str, spec: bytes) -> bytes:
    """kube-apiserver's envelope around an object whose field 2 is `spec`."""
    type_meta = _length_delimited(1, api_version.encode()) + _length_delimited(2, kind.encode())
    raw = _length_delimited(1, b"") + _length_delimited(2, spec)
    return b"k8s\x00" + _length_delimited(1, type_meta) + _length_delimited(2, raw)


PROTOBUF = {"content-type": "application/vnd.kubernetes.protobuf"}


def test_kubectl_auth_can_i_protobuf_reviews_are_read_as_their_json():
    attributes = b"".join(
        _length_delimited(n, v.encode())
        for n, v in ((1, "gpu-dev"), (2, "create"), (5, "pods"), (6, "log"))
    )
    body = _protobuf(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        b"\x0a" + bytes([len(attributes)]) + attributes,
    )
    assert request_body.decode("POST", PROTOBUF, body).value == {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "metadata": {},
        "spec": {
            "resourceAttributes": {
                "namespace": "gpu-dev",
                "verb": "create",
                "resource": "pods",
                "subresource": "log",
            }
        },
    }
    rules = _protobuf(
        "authorization.k8s.io/v1", "SelfSubjectRulesReview", _length_delimited(1, b"gpu-dev")
    )
    assert request_body.decode("POST", PROTOBUF, rules).value["spec"] == {"namespace": "gpu-dev"}


@pytest.mark.parametrize(
    "body",
    [
        _protobuf("v1", "ConfigMap", b""),  # other kinds stay unread
        b"k8s\x00\x0a\x7f",  # truncated
        b"not protobuf",
    ],
)
def test_other_protobuf_bodies_stay_415(body: bytes):
    assert _refused(lambda: request_body.decode("POST", PROTOBUF, body)).code == 415
