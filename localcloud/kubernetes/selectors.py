"""Label and field selectors with the API server's semantics (unsupported field → 400)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Matcher = Callable[[dict[str, Any]], bool]

# Field selectors a real API server accepts per resource (the ones we serve).
SUPPORTED_FIELDS = {
    "pods": {"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase"},
    "nodes": {"metadata.name", "spec.unschedulable"},
    "services": {"metadata.name", "metadata.namespace"},
    "configmaps": {"metadata.name", "metadata.namespace"},
    "secrets": {"metadata.name", "metadata.namespace", "type"},
    "namespaces": {"metadata.name", "status.phase"},
    # kube-apiserver's for core/v1 Events (`kubectl describe` asks for involvedObject.kind,
    # name, namespace and uid); `source` is source.component.
    "events": {
        "metadata.name",
        "metadata.namespace",
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    },
    "persistentvolumes": {"metadata.name"},
    "persistentvolumeclaims": {"metadata.name", "metadata.namespace"},
}

_SET = re.compile(r"^\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ = re.compile(r"^\s*([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)\s*$")
# A field selector's value may hold what a label's may not (`spec.containers{dev}`, a uid).
_FIELD = re.compile(r"^\s*([\w./-]+)\s*(==|=|!=)\s*([^,=!]*?)\s*$")
_FIELD_PATHS = {"source": "source.component"}  # selector field -> where its value is
_EXISTS = re.compile(r"^\s*(!?)([\w./-]+)\s*$")


class SelectorError(ValueError):
    pass


def _split(selector: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return parts


def _one_of(key: str, values: set[str], negate: bool) -> Callable[[dict[str, str]], bool]:
    return lambda labels: (labels.get(key) in values) != negate


def _equals(key: str, value: str, negate: bool) -> Callable[[dict[str, str]], bool]:
    return lambda labels: (labels.get(key) == value) != negate


def _exists(key: str, negate: bool) -> Callable[[dict[str, str]], bool]:
    return lambda labels: (key in labels) != negate


def label_matcher(selector: str | None) -> Matcher:
    if not selector:
        return lambda _obj: True
    tests: list[Callable[[dict[str, str]], bool]] = []
    for requirement in _split(selector):
        if match := _SET.match(requirement):
            values = {v.strip() for v in match[3].split(",")}
            tests.append(_one_of(match[1], values, negate=match[2] == "notin"))
        elif match := _EQ.match(requirement):
            tests.append(_equals(match[1], match[3], negate=match[2] == "!="))
        elif match := _EXISTS.match(requirement):
            tests.append(_exists(match[2], negate=match[1] == "!"))
        else:
            raise SelectorError(f"unable to parse requirement: {requirement!r}")

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(test(labels) for test in tests)

    return matches


def _field_value(obj: dict[str, Any], field: str) -> str:
    value: Any = obj
    for part in _FIELD_PATHS.get(field, field).split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else str(value)


def field_matcher(resource: str, selector: str | None) -> Matcher:
    if not selector:
        return lambda _obj: True
    tests = []
    for requirement in _split(selector):
        match = _FIELD.match(requirement)
        if not match:
            raise SelectorError(f"invalid field selector: {requirement!r}")
        path, op, value = match[1], match[2], match[3]
        if path not in SUPPORTED_FIELDS.get(resource, set()):
            raise SelectorError(f'field label not supported: "{path}"')
        tests.append((path, op == "!=", value))

    def matches(obj: dict[str, Any]) -> bool:
        return all((_field_value(obj, p) == v) != negate for p, negate, v in tests)

    return matches


def expression_matches(labels: dict[str, str], expression: dict[str, Any]) -> bool:
    """A node selector requirement (`In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`)."""
    key, operator, values = expression["key"], expression["operator"], expression.get("values")
    if operator == "In":
        return labels.get(key) in (values or [])
    if operator == "NotIn":
        return labels.get(key) not in (values or [])
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    try:  # Gt / Lt: integers
        value, bound = int(labels[key]), int((values or ["x"])[0])
    except (KeyError, ValueError):
        return False
    return value > bound if operator == "Gt" else value < bound
