"""The access reviews kubectl sends as protobuf, read into their JSON form.

kubectl's typed clients send built-in kinds as `application/vnd.kubernetes.protobuf`, and
`kubectl auth can-i` has no JSON fallback: its SelfSubjectAccessReview (and `--list`'s
SelfSubjectRulesReview) arrive only that way. So the stand-in reads these two kinds; every
other protobuf body stays 415 (request_body.py).

The wire form is kube-apiserver's: the magic `k8s\\x00`, then a `runtime.Unknown` message
(1: typeMeta {1: apiVersion, 2: kind}, 2: raw) whose `raw` is the object (1: metadata, 2:
spec). The spec's fields are those of k8s.io/api/authorization/v1's generated.proto:
ResourceAttributes 1 namespace, 2 verb, 3 group, 4 version, 5 resource, 6 subresource,
7 name; NonResourceAttributes 1 path, 2 verb; SelfSubjectRulesReviewSpec 1 namespace. The
answer goes back as JSON, which kubectl's client accepts (it asks for protobuf or any)."""

from __future__ import annotations

from typing import Any

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
_RESOURCE_ATTRIBUTES = {
    1: "namespace",
    2: "verb",
    3: "group",
    4: "version",
    5: "resource",
    6: "subresource",
    7: "name",
}
_NON_RESOURCE_ATTRIBUTES = {1: "path", 2: "verb"}
KINDS = frozenset({"SelfSubjectAccessReview", "SelfSubjectRulesReview"})


class NotAReview(ValueError):
    """Not one of the two review kinds, or not well-formed protobuf."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise NotAReview("truncated varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def _fields(data: bytes) -> dict[int, bytes]:
    """A message's length-delimited fields by number (the last of repeated ones wins, as
    protobuf merges scalars); varint and fixed-width fields are skipped."""
    found: dict[int, bytes] = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            _, at = _varint(data, at)
        elif wire_type == 1:
            at += 8
        elif wire_type == 5:
            at += 4
        elif wire_type == 2:
            length, at = _varint(data, at)
            if at + length > len(data):
                raise NotAReview("truncated field")
            found[number] = data[at : at + length]
            at += length
        else:
            raise NotAReview(f"unsupported wire type {wire_type}")
        if at > len(data):
            raise NotAReview("truncated field")
    return found


def _strings(data: bytes, names: dict[int, str]) -> dict[str, str]:
    fields = _fields(data)
    try:
        return {name: fields[number].decode() for number, name in names.items() if number in fields}
    except UnicodeDecodeError as error:
        raise NotAReview(str(error)) from None


def review(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf SelfSubjectAccessReview or SelfSubjectRulesReview."""
    if not body.startswith(MAGIC):
        raise NotAReview("no protobuf envelope")
    unknown = _fields(body[len(MAGIC) :])
    type_meta = _strings(unknown.get(1, b""), {1: "apiVersion", 2: "kind"})
    if type_meta.get("kind") not in KINDS:
        raise NotAReview(f"kind {type_meta.get('kind')!r}")
    raw_spec = _fields(unknown.get(2, b"")).get(2, b"")
    if type_meta["kind"] == "SelfSubjectRulesReview":
        spec: dict[str, Any] = _strings(raw_spec, {1: "namespace"})
    else:
        spec_fields = _fields(raw_spec)
        spec = {}
        if 1 in spec_fields:
            spec["resourceAttributes"] = _strings(spec_fields[1], _RESOURCE_ATTRIBUTES)
        if 2 in spec_fields:
            spec["nonResourceAttributes"] = _strings(spec_fields[2], _NON_RESOURCE_ATTRIBUTES)
    return {**type_meta, "metadata": {}, "spec": spec}
