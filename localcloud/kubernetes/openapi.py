"""OpenAPI v3 for the kinds the stand-in serves (`/openapi/v3` and one document per
group/version), rendered from the compact descriptions in `openapi_schemas.py`, and the
server-side field validation (`fieldValidation=Strict`) that rests on them.

kubectl needs both: `kubectl explain` reads the v3 documents, and `kubectl apply`
validates on the server when the kind's PATCH operation lists the `fieldValidation`
parameter (kubectl's query-parameter verifier), sending `fieldValidation=Strict` instead of
validating against OpenAPI v2 itself. So v2 (`/openapi/v2`) is not served. A kind missing
from the descriptions (any other module may add one to KINDS) gets an open schema with its
metadata only. Merge keys are published as kube-apiserver publishes them
(`x-kubernetes-patch-merge-key`), so kubectl computes the strategic merge patches the
stand-in merges (`strategic_merge.py`)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.openapi_schemas import SCHEMAS
from localcloud.kubernetes.request_body import Body
from localcloud.kubernetes.resources import KINDS, api_version
from localcloud.kubernetes.strategic_merge import MERGE_KEYS, MERGED_AS_SETS

Obj = dict[str, Any]
PRIMITIVES = {"string", "integer", "boolean", "number"}
VALIDATION_DIRECTIVES = ("Ignore", "Warn", "Strict")


def full_name(short: str) -> str:
    if short.startswith("meta."):
        return f"io.k8s.apimachinery.pkg.apis.{short}"
    return f"io.k8s.api.{short}"


def _kind_schema_name(resource: str) -> str:
    group, _, version = api_version(resource).rpartition("/")
    return f"{group.split('.')[0] or 'core'}.{version}.{KINDS[resource][0]}"


def _ref(short: str) -> Obj:
    return {"$ref": f"#/components/schemas/{full_name(short)}"}


def _type(spec: str, field: str) -> Obj:
    if spec.startswith("["):
        items = _type(spec[1:-1], field)
        listed: Obj = {"type": "array", "items": items}
        if field in MERGE_KEYS or field == "ports":
            listed["x-kubernetes-patch-strategy"] = "merge"
            listed["x-kubernetes-patch-merge-key"] = MERGE_KEYS.get(field, "containerPort")
        elif field in MERGED_AS_SETS:
            listed["x-kubernetes-patch-strategy"] = "merge"
        return listed
    if spec in PRIMITIVES:
        return {"type": spec}
    if spec == "quantity":
        return {"x-kubernetes-int-or-string": True}
    if spec == "map":
        return {"type": "object", "additionalProperties": {"type": "string"}}
    if spec == "object":
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return _ref(spec)


def _schema(short: str, extra: Obj | None = None) -> Obj:
    description, fields, closed = SCHEMAS.get(short, ("", {}, False))
    properties = {name: _type(spec, name) for name, spec in fields.items()}
    schema: Obj = {"description": description, "type": "object", "properties": properties}
    if not closed:
        schema["x-kubernetes-preserve-unknown-fields"] = True
    return schema | (extra or {})


def _kind_schema(resource: str) -> Obj:
    group, _, version = api_version(resource).rpartition("/")
    schema = _schema(
        _kind_schema_name(resource),
        {
            "x-kubernetes-group-version-kind": [
                {"group": group, "version": version, "kind": KINDS[resource][0]}
            ]
        },
    )
    schema["properties"] = {
        "apiVersion": {"type": "string", "description": "Versioned schema of this object."},
        "kind": {"type": "string", "description": "The REST resource this object represents."},
        "metadata": _ref("meta.v1.ObjectMeta"),
        **schema["properties"],
    }
    return schema


def _referenced(short: str, found: set[str]) -> None:
    if short in found:
        return
    found.add(short)
    for spec in SCHEMAS.get(short, ("", {}, False))[1].values():
        inner = spec.strip("[]")
        if inner in SCHEMAS:
            _referenced(inner, found)


def _operation(verb: str, resource: str, kind_ref: Obj) -> Obj:
    group, _, version = api_version(resource).rpartition("/")
    parameters = [{"name": "dryRun", "in": "query", "schema": {"type": "string"}}]
    if verb in ("post", "put", "patch"):
        parameters += [
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
        ]
    return {
        "operationId": f"{verb}{KINDS[resource][0]}",
        "parameters": parameters,
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": kind_ref}}}
        },
        "x-kubernetes-group-version-kind": {
            "group": group,
            "version": version,
            "kind": KINDS[resource][0],
        },
    }


def document(group_version: str) -> Obj | None:
    """The OpenAPI v3 document of one group/version, or None if it serves nothing."""
    resources = [r for r in KINDS if api_version(r) == group_version]
    if not resources:
        return None
    prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    schemas: dict[str, Obj] = {}
    paths: dict[str, Obj] = {}
    for resource in resources:
        short = _kind_schema_name(resource)
        found: set[str] = set()
        _referenced(short, found)
        _referenced("meta.v1.ObjectMeta", found)
        for name in found - {short}:
            schemas[full_name(name)] = _schema(name)
        schemas[full_name(short)] = _kind_schema(resource)
        kind_ref = _ref(short)
        scope = "/namespaces/{namespace}" if KINDS[resource][1] else ""
        collection = f"{prefix}{scope}/{resource}"
        paths[collection] = {
            verb: _operation(verb, resource, kind_ref) for verb in ("get", "post", "delete")
        }
        paths[f"{collection}/{{name}}"] = {
            verb: _operation(verb, resource, kind_ref) for verb in ("get", "put", "patch", "delete")
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes (gpu-dev local stand-in)", "version": "v1.33.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _discovery_path(group_version: str) -> str:
    return "api/v1" if group_version == "v1" else f"apis/{group_version}"


def answer(path: str) -> Obj | None:
    """The document at `path` (/openapi/v3 or one group/version's), or None."""
    path = path.rstrip("/")
    if path == "/openapi/v3":
        listed = {}
        for group_version in dict.fromkeys(api_version(r) for r in KINDS):
            body = json.dumps(document(group_version), sort_keys=True).encode()
            digest = hashlib.sha256(body).hexdigest()[:32].upper()
            relative = _discovery_path(group_version)
            listed[relative] = {"serverRelativeURL": f"/openapi/v3/{relative}?hash={digest}"}
        return {"paths": listed}
    if not path.startswith("/openapi/v3/"):
        return None
    relative = path.removeprefix("/openapi/v3/")
    if relative == "api/v1":
        return document("v1")
    if relative.startswith("apis/"):
        return document(relative.removeprefix("apis/"))
    return None


def _unknown_fields(value: Any, short: str, path: str) -> list[str]:
    """Fields of `value` a closed schema does not declare (directives `$...` aside)."""
    if short not in SCHEMAS or not isinstance(value, dict):
        return []
    _, fields, closed = SCHEMAS[short]
    unknown: list[str] = []
    for key, item in value.items():
        at = f"{path}.{key}" if path else key
        if key.startswith("$"):
            continue
        spec = fields.get(key)
        if spec is None:
            if closed:
                unknown.append(at)
            continue
        inner = spec.strip("[]")
        if spec.startswith("[") and isinstance(item, list):
            for index, element in enumerate(item):
                unknown += _unknown_fields(element, inner, f"{at}[{index}]")
        else:
            unknown += _unknown_fields(item, inner, at)
    return unknown


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "boolean": (bool,),
    "number": (int, float),
    "quantity": (int, str),
    "map": (dict,),
    "object": (dict,),
}


def _type_errors(value: Any, spec: str, path: str) -> list[str]:
    """Where `value` cannot be decoded as `spec` says (null is always allowed)."""
    if value is None:
        return []
    if spec.startswith("["):
        if not isinstance(value, list):
            return [f"{path}: expected a list, got {json.dumps(value)[:40]}"]
        return [
            e
            for n, item in enumerate(value)
            for e in _type_errors(item, spec[1:-1], f"{path}[{n}]")
        ]
    expected = _JSON_TYPES.get(spec, (dict,))
    wrong = not isinstance(value, expected) or (spec == "integer" and isinstance(value, bool))
    if wrong:
        wanted = spec if spec in _JSON_TYPES else "an object"
        return [f"{path}: expected {wanted}, got {json.dumps(value)[:40]}"]
    if spec == "map":
        return [
            f"{path}.{k}: expected string, got {json.dumps(v)[:40]}"
            for k, v in value.items()
            if not isinstance(v, str) and v is not None
        ]
    if spec in SCHEMAS:
        fields = SCHEMAS[spec][1]
        return [
            e
            for key, item in value.items()
            if key in fields
            for e in _type_errors(item, fields[key], f"{path}.{key}" if path else key)
        ]
    return []


def _decoding_errors(resource: str, obj: dict[str, Any]) -> list[str]:
    errors = _type_errors(obj.get("metadata"), "meta.v1.ObjectMeta", "metadata")
    rest = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    return errors + _type_errors(rest, _kind_schema_name(resource), "")


def check_json_patch_result(resource: str, patched: Any) -> None:
    """A JSON patch's body is operations, not the object, so `check_types` cannot read it:
    kube-apiserver decodes the patched object into its type instead (handlers/patch.go,
    `DecodeInto`) and answers a field of the wrong type with 422 Invalid on `patch`. Without
    this a role's `verbs: "*"` (a string, not a list) would be stored."""
    errors = _decoding_errors(resource, patched) if isinstance(patched, dict) else []
    if errors:
        raise ApiError(
            422,
            "Invalid",
            f' "" is invalid: patch: Invalid value: the patched object cannot be decoded:'
            f" {'; '.join(errors)}",
        )


def check_types(method: str, resource: str, body: Body) -> None:
    """Refuse a body whose described fields have the wrong JSON type (400), as
    kube-apiserver refuses what it cannot decode into its types, whatever fieldValidation
    says."""
    if method not in ("POST", "PUT", "PATCH") or body.patch_type == "json":
        return
    if not isinstance(body.value, dict):
        return
    errors = _decoding_errors(resource, body.value)
    if errors:
        kind = KINDS[resource][0]
        raise ApiError(
            400,
            "BadRequest",
            f'{kind} in version "{api_version(resource).rpartition("/")[2]}" cannot be'
            f" handled as a {kind}: {'; '.join(errors)}",
        )


def check_fields(method: str, resource: str, body: Body, query: dict[str, str]) -> list[str]:
    """Unknown fields as kube-apiserver treats them: refused with `fieldValidation=Strict`
    (400), returned as warnings with `Warn` or no directive (the server sends them as
    `Warning` headers; Warn is its default, handlers/rest.go `fieldValidation`), let pass
    with `Ignore`."""
    directive = query.get("fieldValidation") or "Warn"
    if directive not in VALIDATION_DIRECTIVES:
        raise ApiError(
            400,
            "BadRequest",
            f'fieldValidation: Unsupported value: "{directive}": supported values: '
            '"Ignore", "Strict", "Warn"',
        )
    if directive not in ("Strict", "Warn") or method not in ("POST", "PUT", "PATCH"):
        return []
    if body.patch_type == "json" or not isinstance(body.value, dict):
        return []
    top = {k: v for k, v in body.value.items() if k not in ("apiVersion", "kind", "metadata")}
    unknown = _unknown_fields(body.value.get("metadata"), "meta.v1.ObjectMeta", "metadata")
    unknown += _unknown_fields(top, _kind_schema_name(resource), "")
    if directive == "Warn":
        return [f'unknown field "{f}"' for f in unknown]
    if unknown:
        kind = KINDS[resource][0]
        fields = ", ".join(f'unknown field "{f}"' for f in unknown)
        raise ApiError(
            400,
            "BadRequest",
            f'{kind} in version "{api_version(resource).rpartition("/")[2]}" cannot be'
            f" handled as a {kind}: strict decoding error: {fields}",
        )
    return []
