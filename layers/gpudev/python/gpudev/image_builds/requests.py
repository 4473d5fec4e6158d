"""The image routes' services (functions/api/routes/images.py): each binds the caller first
(as every route), then acts on the caller's own contexts only. A context is the caller's
once they asked to upload it; another user's context is not found, as another user's
reservation is not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from gpudev.callers import bound_user
from gpudev.errors import InvalidRequest, NotFound
from gpudev.identity import Caller
from gpudev.image_builds.builds import ImageBuilds
from gpudev.image_builds.schemas import BuildList, BuildShown, UploadAnswer, UploadRequest
from gpudev.repositories.image_builds import ImageBuildRow, OwnedBuild


class ContextTooLarge(InvalidRequest):
    pass


def request_upload(
    conn: psycopg.Connection[Any],
    caller: Caller,
    request: UploadRequest,
    builds: ImageBuilds | None = None,
) -> UploadAnswer:
    """Where to PUT the context, or that its build stands already (nothing to upload)."""
    bound_user(conn, caller)
    builds = builds or ImageBuilds.deployed(conn)
    builds.require_enabled()
    limit = builds.settings.max_context_bytes
    if request.size_bytes > limit:
        raise ContextTooLarge(
            f"the build context is {request.size_bytes:,} bytes, over this deployment's "
            f"limit of {limit:,}",
            field="size_bytes",
            hint="leave out what the build does not need with a .dockerignore",
        )
    builds.add_owner(request.context_hash, caller.username)
    row = builds.standing(request.context_hash)  # a built image ECR expired: built again
    if row is not None and row.status == "succeeded":
        return UploadAnswer(
            context_hash=request.context_hash,
            action="built",
            image=builds.image(request.context_hash),
        )
    if row is not None and row.status == "building":
        return UploadAnswer(context_hash=request.context_hash, action="building")
    return UploadAnswer(
        context_hash=request.context_hash,
        action="upload",
        upload_url=builds.upload_url(request.context_hash, request.size_bytes),
    )


def request_build(
    conn: psycopg.Connection[Any],
    caller: Caller,
    context_hash: str,
    builds: ImageBuilds | None = None,
    retry: bool = False,
) -> BuildShown:
    """`gpu-dev image build`: start the build of an uploaded context. A failed one is built
    again when it failed over `retry_failed_after_seconds` ago, or at once with `retry`. A
    caller with `max_building_per_user` builds running starts none."""
    builds = builds or ImageBuilds.deployed(conn)
    _require_owned(conn, caller, builds, context_hash)
    now = datetime.now(UTC)
    retry_failed_before = (
        now if retry else now - timedelta(seconds=builds.settings.retry_failed_after_seconds)
    )
    standing = builds.standing(context_hash)
    if standing is None or standing.status == "failed":
        builds.rows.require_build_room(caller.username, builds.settings.max_building_per_user)
    row = builds.start(context_hash, retry_failed_before=retry_failed_before)
    return shown(builds, builds.refresh(row))


def read_build(
    conn: psycopg.Connection[Any],
    caller: Caller,
    context_hash: str,
    builds: ImageBuilds | None = None,
) -> BuildShown:
    builds = builds or ImageBuilds.deployed(conn)
    first_at = _require_owned(conn, caller, builds, context_hash)
    row = builds.get(context_hash)
    if row is None:
        return BuildShown(context_hash=context_hash, status="uploaded", uploaded_at=first_at)
    return shown(builds, builds.refresh(row), first_at)


def list_builds(
    conn: psycopg.Connection[Any],
    caller: Caller,
    limit: int = 100,
    builds: ImageBuilds | None = None,
) -> BuildList:
    """`gpu-dev image list`: the caller's contexts, newest first, as last recorded."""
    bound_user(conn, caller)
    builds = builds or ImageBuilds.deployed(conn)
    return BuildList(builds=[_owned(builds, o) for o in builds.list_owned(caller.username, limit)])


def shown(
    builds: ImageBuilds, row: ImageBuildRow, uploaded_at: datetime | None = None
) -> BuildShown:
    return BuildShown(
        context_hash=row.context_hash,
        status=row.status,  # type: ignore[arg-type]
        phase=row.phase,
        image=builds.image(row.context_hash) if row.status == "succeeded" else None,
        image_digest=row.image_digest,
        size_bytes=row.size_bytes,
        uploaded_at=uploaded_at or row.claimed_at,
        finished_at=row.finished_at,
        log_tail=row.log_tail,
    )


def _owned(builds: ImageBuilds, row: OwnedBuild) -> BuildShown:
    return BuildShown(
        context_hash=row.context_hash,
        status=row.status or "uploaded",  # type: ignore[arg-type]
        phase=row.phase,
        image=builds.image(row.context_hash) if row.status == "succeeded" else None,
        image_digest=row.image_digest,
        size_bytes=row.size_bytes,
        uploaded_at=row.first_at,
        finished_at=row.finished_at,
        log_tail=row.log_tail,
    )


def _require_owned(
    conn: psycopg.Connection[Any], caller: Caller, builds: ImageBuilds, context_hash: str
) -> datetime:
    bound_user(conn, caller)
    builds.require_enabled()
    first_at = builds.owned_since(context_hash, caller.username)
    if first_at is None:
        raise NotFound(f"no build context {context_hash[:12]} of yours", field="context_hash")
    return first_at
