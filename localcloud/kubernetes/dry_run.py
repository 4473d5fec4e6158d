"""`dryRun=All` on writes: the request is served as if for real (admission, validation,
defaults, conflicts, the answer) and everything it changed in the store is rolled back
before anyone else can see it, as kube-apiserver runs a dry-run request through its whole
chain and skips only the storage write. Any other dryRun value is refused, as
kube-apiserver refuses it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.store import ObjectStore


def requested(method: str, query: dict[str, str], body: Any) -> bool:
    """Whether a write asks for a dry run: `dryRun=All` in the query, or for a delete in
    its DeleteOptions body (`"dryRun": ["All"]`, where kubectl puts it); 400 for any other
    value."""
    if method == "GET":
        return False
    value = query.get("dryRun")
    options = body if method == "DELETE" and isinstance(body, dict) else {}
    if value is None and options.get("dryRun"):
        listed = options["dryRun"]
        value = ",".join(listed) if isinstance(listed, list) else str(listed)
    if value is None:
        return False
    if value != "All":
        raise ApiError(
            400,
            "BadRequest",
            f'dryRun: Unsupported value: "{value}": supported values: "All"',
        )
    return True


@contextlib.contextmanager
def maybe(store: ObjectStore, dry: bool) -> Iterator[None]:
    """Serve the write inside; with `dry`, undo it on the way out."""
    if not dry:
        yield
        return
    with store.rolled_back():
        yield


def keep_versions(store: ObjectStore, resource: str, answer: Any) -> None:
    """A dry run's answer, changed in place to carry the resourceVersion the store still
    holds (none for a create: nothing was stored), as kube-apiserver's dry-run storage
    answers; `kubectl diff` would otherwise show a version change for every object."""
    listed = answer.get("items") if isinstance(answer, dict) and "items" in answer else [answer]
    for obj in listed or []:
        metadata = obj.get("metadata") if isinstance(obj, dict) else None
        if not isinstance(metadata, dict) or "name" not in metadata:
            continue  # a Status (pods/binding)
        try:
            stored = store.get(
                resource, metadata.get("namespace", ""), metadata["name"], frozen=True
            )
        except ApiError:
            metadata.pop("resourceVersion", None)
        else:
            metadata["resourceVersion"] = stored["metadata"]["resourceVersion"]
