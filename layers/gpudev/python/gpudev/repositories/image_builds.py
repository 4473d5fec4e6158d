"""Image builds' rows (migration 0045; `sql/image_builds/`): one per context hash, who
uploaded which context, and the reservation columns a build writes when it succeeds. The
caller owns the transaction; every write is conditional and returns what it wrote (None:
the row had moved on)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from pydantic import BaseModel

from gpudev.db.queries import query
from gpudev.db.rows import fetch_all, fetch_one
from gpudev.errors import LimitReached


class ImageBuildRow(BaseModel):
    context_hash: str
    status: str  # building, succeeded, failed
    build_id: str | None = None
    phase: str | None = None
    image_digest: str | None = None
    size_bytes: int | None = None
    log_tail: str | None = None
    claimed_at: datetime
    finished_at: datetime | None = None


class OwnedBuild(BaseModel):
    """An uploaded context of a user and its build (none yet: status None)."""

    context_hash: str
    first_at: datetime
    status: str | None = None
    phase: str | None = None
    image_digest: str | None = None
    size_bytes: int | None = None
    finished_at: datetime | None = None
    log_tail: str | None = None


class ImageBuildsRepository:
    def __init__(self, conn: psycopg.Connection[Any]):
        self._conn = conn

    def _one(self, name: str, params: dict[str, Any]) -> ImageBuildRow | None:
        return fetch_one(self._conn, f"image_builds/{name}", ImageBuildRow, params)

    def get(self, context_hash: str) -> ImageBuildRow | None:
        return self._one("get", {"context_hash": context_hash})

    def claim(
        self, context_hash: str, retry_failed_before: datetime, claim_seconds: int
    ) -> ImageBuildRow | None:
        """The row when the build is ours to start (claim.sql says when)."""
        return self._one(
            "claim",
            {
                "context_hash": context_hash,
                "retry_failed_before": retry_failed_before,
                "claim_seconds": claim_seconds,
            },
        )

    def release(self, context_hash: str, claimed_at: datetime) -> ImageBuildRow | None:
        """Our claim's StartBuild failed: the row is failed, claimable again at once."""
        return self._one("release", {"context_hash": context_hash, "claimed_at": claimed_at})

    def image_gone(self, context_hash: str) -> ImageBuildRow | None:
        """A succeeded build's image is no longer in ECR: failed, built again when asked."""
        return self._one("image_gone", {"context_hash": context_hash})

    def building_for(self, username: str) -> int:
        """How many of the user's contexts are being built now."""
        row = self._conn.execute(
            query("image_builds/building_for"), {"username": username}
        ).fetchone()
        return int(row[0]) if row else 0

    def require_build_room(self, username: str, cap: int) -> None:
        """A build about to start for `username` (`gpu-dev image build`, or a reservation's
        `--dockerfile` at submit): refused at `cap` running builds of theirs."""
        running = self.building_for(username)
        if running >= cap:
            raise LimitReached(
                f"you have {running} image builds running, this deployment's limit is {cap}: "
                "nothing was started",
                limit=cap,
                hint="wait for one to end (gpu-dev image list)",
            )

    def started(self, context_hash: str, build_id: str, phase: str | None) -> ImageBuildRow | None:
        return self._one(
            "started", {"context_hash": context_hash, "build_id": build_id, "phase": phase}
        )

    def progress(self, context_hash: str, build_id: str, phase: str | None) -> ImageBuildRow | None:
        return self._one(
            "progress", {"context_hash": context_hash, "build_id": build_id, "phase": phase}
        )

    def finish(
        self,
        row: ImageBuildRow,
        status: str,
        phase: str | None,
        digest: str | None,
        size: int | None,
        tail: str | None,
    ) -> ImageBuildRow | None:
        return self._one(
            "finish",
            {
                "context_hash": row.context_hash,
                "build_id": row.build_id,
                "status": status,
                "phase": phase,
                "image_digest": digest,
                "size_bytes": size,
                "log_tail": tail,
            },
        )

    def add_owner(self, context_hash: str, username: str) -> None:
        self._conn.execute(
            query("image_builds/add_owner"), {"context_hash": context_hash, "username": username}
        )

    def owned_since(self, context_hash: str, username: str) -> datetime | None:
        """When `username` first asked to upload the context; None: not theirs."""
        row = self._conn.execute(
            query("image_builds/owned"), {"context_hash": context_hash, "username": username}
        ).fetchone()
        return row[0] if row else None

    def list_owned(self, username: str, limit: int) -> list[OwnedBuild]:
        return fetch_all(
            self._conn,
            "image_builds/list_for_user",
            OwnedBuild,
            {"username": username, "limit": limit},
        )

    def use_in_reservation(
        self, reservation_id: UUID, context_hash: str, image: str, digest: str, pull: str
    ) -> bool:
        """The reservation waiting for this build runs its image (once, while queued); False:
        the reservation had moved on (nothing written)."""
        cursor = self._conn.execute(
            query("image_builds/reservation_image"),
            {
                "reservation_id": reservation_id,
                "context_hash": context_hash,
                "image": image,
                "image_digest": digest,
                "image_pull": pull,
            },
        )
        return cursor.fetchone() is not None

    def reservation_progress(self, reservation_id: UUID, detail: str) -> None:
        """A reservation waiting for its build: the status line."""
        self._conn.execute(
            query("image_builds/reservation_progress"),
            {"reservation_id": reservation_id, "detail": detail},
        )
