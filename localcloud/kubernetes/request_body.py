"""A request's body as kube-apiserver reads it: by its Content-Type, into JSON, or a Status
that says why not (never a dropped connection).

Creates and updates take `application/json`; patches take the three kinds kubectl and the
official client send (`json-patch+json`, `merge-patch+json`,
`strategic-merge-patch+json`); the access reviews `kubectl auth can-i` sends as protobuf
are read too (protobuf_reviews.py). Everything else, other protobuf (`application/vnd.
kubernetes.protobuf`, which typed clients may prefer), YAML and server-side apply's
`apply-patch+yaml`, is 415 UnsupportedMediaType naming what is accepted; a body that is not
JSON, or not the JSON a patch type needs, is 400 BadRequest."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from localcloud.kubernetes import protobuf_reviews
from localcloud.kubernetes.errors import ApiError

JSON = "application/json"
PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
}


@dataclass(frozen=True)
class Body:
    value: Any  # the decoded JSON, or None when there was no body
    patch_type: str | None = None  # for PATCH: json, merge or strategic


def media_type(headers: dict[str, str]) -> str:
    value = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    return value.split(";")[0].strip().lower()


def _unsupported(media: str, accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format ({media}) - accepted media types"
        f" include: {', '.join(accepted)}",
    )


def decode(method: str, headers: dict[str, str], body: bytes) -> Body:
    media = media_type(headers)
    if method == "PATCH":
        patch_type = PATCH_TYPES.get(media)
        if patch_type is None:
            raise _unsupported(media or "none", list(PATCH_TYPES))
    elif not body:
        return Body(None)
    else:
        patch_type = None
        if media == protobuf_reviews.MEDIA_TYPE and method == "POST":
            try:
                return Body(protobuf_reviews.review(body))
            except protobuf_reviews.NotAReview:
                pass  # any other protobuf body: 415 below
        if media not in ("", JSON):
            raise _unsupported(media, [JSON])
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise ApiError(
            400, "BadRequest", f"the body of the request could not be decoded as JSON: {error}"
        ) from None
    if patch_type == "json" and not isinstance(value, list):
        raise ApiError(400, "BadRequest", "a JSON patch must be an array of operations")
    if patch_type in ("merge", "strategic") and not isinstance(value, dict):
        raise ApiError(400, "BadRequest", f"a {patch_type} merge patch must be a JSON object")
    if method in ("POST", "PUT") and not isinstance(value, dict):
        raise ApiError(400, "BadRequest", "the body of the request must be a JSON object")
    if isinstance(value, dict) and not isinstance(value.get("metadata", {}), dict | None):
        raise ApiError(
            400, "BadRequest", "metadata: the body's metadata must be a JSON object (ObjectMeta)"
        )
    return Body(value, patch_type)
