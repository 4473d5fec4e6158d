"""What kube-apiserver refuses, for the kinds the stand-in serves: pure functions over a
create or update body, run by the store before anything is written (never on status writes).

`admit` answers like the API server: 400 BadRequest when the body cannot be decoded (bad
base64 in a Secret, a quantity that does not parse) or names another object than the URL,
422 Invalid with one cause per field error otherwise (`pkg/apis/core/validation`). Each kind
is a name rule plus a spec rule in the tables at the bottom (and, for PersistentVolumes and
claims, an update rule: `storage_validation.py`); the string rules are in `rules.py`.
Not checked: pod spec immutability on update, admission (LimitRanges, quotas, webhooks;
PodSecurity is `pod_security.py`, claim resize `storage_validation.refuse_resize`),
unknown fields (decoded and kept, where the API server drops them).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from localcloud.kubernetes import (
    apps,
    networking,
    pod_validation,
    rbac,
    rules,
    storage_validation,
)
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.rules import FieldError, Undecodable, invalid, required

Obj = dict[str, Any]
MAX_SECRET_SIZE = 1024 * 1024  # also ConfigMaps
MAX_ANNOTATIONS_SIZE = 256 * 1024


# -- metadata -------------------------------------------------------------------------------
def _annotations(values: dict[str, Any], path: str) -> list[FieldError]:
    errors = [e for key in values for e in invalid(path, key, rules.qualified_name(key.lower()))]
    size = sum(len(k.encode()) + len(str(v).encode()) for k, v in values.items())
    return errors + (
        [rules.too_long(path, MAX_ANNOTATIONS_SIZE)] if size > MAX_ANNOTATIONS_SIZE else []
    )


def metadata(meta: Obj, name_rule: rules.Rule) -> list[FieldError]:
    errors = []
    if generate_name := meta.get("generateName"):
        # the API server checks a prefix as a name whose trailing '-' is masked
        masked = (
            generate_name[:-2] + "a"
            if len(generate_name) > 1 and generate_name.endswith("-")
            else generate_name
        )
        errors += invalid("metadata.generateName", generate_name, name_rule(masked))
    if name := meta.get("name"):
        errors += invalid("metadata.name", name, name_rule(name))
    else:
        errors.append(required("metadata.name", "name or generateName is required"))
    return (
        errors
        + rules.labels(meta.get("labels") or {}, "metadata.labels")
        + _annotations(meta.get("annotations") or {}, "metadata.annotations")
    )


# -- services, config maps, secrets ---------------------------------------------------------
def service(obj: Obj) -> list[FieldError]:
    spec = obj.get("spec") or {}
    ports = spec.get("ports") or []
    errors = rules.supported(
        "spec.type", spec.get("type"), ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
    )
    if not ports and spec.get("clusterIP") != "None" and spec.get("type") != "ExternalName":
        errors.append(required("spec.ports"))
    errors += rules.unique_names(ports, "spec.ports", rules.dns1123_label, require=len(ports) > 1)
    for index, port in enumerate(ports):
        at, target = f"spec.ports[{index}]", port.get("targetPort")
        errors += invalid(f"{at}.port", port.get("port", 0), rules.port_number(port.get("port")))
        errors += rules.supported(f"{at}.protocol", port.get("protocol"), ("TCP", "UDP", "SCTP"))
        if isinstance(target, str) and target:
            errors += invalid(f"{at}.targetPort", target, rules.port_name(target))
        elif target:
            errors += invalid(f"{at}.targetPort", target, rules.port_number(target))
    return errors + rules.labels(spec.get("selector") or {}, "spec.selector")


def config_map(obj: Obj) -> list[FieldError]:
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    errors = []
    for group, keys, other, other_name in (
        ("data", data, binary, "binaryData"),
        ("binaryData", binary, data, "data"),
    ):
        for key in keys:
            errors += invalid(f"{group}[{key}]", key, rules.config_key(key))
            errors += invalid(
                f"{group}[{key}]",
                key,
                [f"duplicate of key present in {other_name}"] if key in other else [],
            )
    size = sum(len(str(v).encode()) for v in data.values()) + sum(
        len(rules.base64_bytes(v)) for v in binary.values()
    )
    return errors + ([rules.too_long("", MAX_SECRET_SIZE)] if size > MAX_SECRET_SIZE else [])


def secret(obj: Obj) -> list[FieldError]:
    data = obj.get("data") or {}
    errors = [e for key in data for e in invalid(f"data[{key}]", key, rules.config_key(key))]
    size = sum(len(rules.base64_bytes(v)) for v in data.values())
    return errors + ([rules.too_long("data", MAX_SECRET_SIZE)] if size > MAX_SECRET_SIZE else [])


def _secret_data(obj: Obj) -> None:
    """Decode `data`, then merge `stringData` into it as the API server does on every write."""
    for value in (obj.get("data") or {}).values():
        rules.base64_bytes(value)
    if string_data := obj.pop("stringData", None):
        obj["data"] = (obj.get("data") or {}) | {
            key: base64.b64encode(str(value).encode()).decode()
            for key, value in string_data.items()
        }


def _binary_data(obj: Obj) -> None:
    for value in (obj.get("binaryData") or {}).values():
        rules.base64_bytes(value)


def _nothing(obj: Obj) -> list[FieldError]:
    return []


def _no_decoding(obj: Obj) -> None:
    pass


# -- the tables -----------------------------------------------------------------------------
NAMES: dict[str, rules.Rule] = {
    "namespaces": rules.dns1123_label,
    "nodes": rules.dns1123_subdomain,
    "pods": rules.dns1123_subdomain,
    "services": rules.dns1035_label,
    "configmaps": rules.dns1123_subdomain,
    "secrets": rules.dns1123_subdomain,
    "events": rules.dns1123_subdomain,
    "networkpolicies": rules.dns1123_subdomain,
    "persistentvolumes": rules.dns1123_subdomain,
    "persistentvolumeclaims": rules.dns1123_subdomain,
    "daemonsets": rules.dns1123_subdomain,
    **dict.fromkeys(rbac.RESOURCES, rbac.path_segment_name),
}
SPECS: dict[str, Callable[[Obj], list[FieldError]]] = {
    "pods": pod_validation.pod,
    "services": service,
    "configmaps": config_map,
    "secrets": secret,
    "networkpolicies": networking.network_policy,
    "persistentvolumes": storage_validation.persistent_volume,
    "persistentvolumeclaims": storage_validation.persistent_volume_claim,
    "daemonsets": apps.daemon_set,
    **rbac.SPECS,
}
# What an update may not change, given the object it replaces.
UPDATES: dict[str, Callable[[Obj, Obj], list[FieldError]]] = {
    "persistentvolumes": storage_validation.persistent_volume_update,
    "persistentvolumeclaims": storage_validation.persistent_volume_claim_update,
    "daemonsets": apps.daemon_set_update,
    **rbac.UPDATES,
}
DECODERS: dict[str, Callable[[Obj], None]] = {
    "pods": pod_validation.quantities,
    "daemonsets": apps.quantities,
    "configmaps": _binary_data,
    "secrets": _secret_data,
    "persistentvolumes": storage_validation.quantities,
    "persistentvolumeclaims": storage_validation.quantities,
}


def validate(resource: str, obj: Obj) -> list[FieldError]:
    return metadata(obj.get("metadata") or {}, NAMES[resource]) + SPECS.get(resource, _nothing)(obj)


def admit(resource: str, kind: str, obj: Obj, current: Obj | None = None) -> ApiError | None:
    """None if the API server would accept `obj` (normalised in place, e.g. a Secret's
    stringData merged into data), else how it refuses. `current` is the object an update
    replaces; its name stands in for a body that names none."""
    meta = obj.get("metadata") or {}
    if current is not None:
        url_name = current["metadata"]["name"]
        if meta.get("name") and meta["name"] != url_name:
            return ApiError(
                400,
                "BadRequest",
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({url_name})",
            )
        meta = {**meta, "name": url_name}
    try:
        DECODERS.get(resource, _no_decoding)(obj)
    except Undecodable as error:
        return ApiError(
            400, "BadRequest", f'{kind} in version "v1" cannot be handled as a {kind}: {error}'
        )
    errors = validate(resource, {**obj, "metadata": meta})
    if current is not None and resource in UPDATES:
        errors += UPDATES[resource](obj, current)
    if not errors:
        if current is not None and resource == "persistentvolumeclaims":
            try:  # a validating admission plugin: after validation, as in the API server
                storage_validation.refuse_resize(obj, current)
            except ApiError as refused:
                return refused
        return None
    messages = list(dict.fromkeys(str(error) for error in errors))
    summary = messages[0] if len(messages) == 1 else f"[{', '.join(messages)}]"
    name = meta.get("name") or ""
    causes = [error.cause() for error in errors]
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {summary}', name, kind, causes)
