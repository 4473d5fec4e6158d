"""Images built from a Dockerfile (docs/images.md#built-images): the CLI uploads the build
context (a tar) through a presigned S3 PUT, AWS CodeBuild builds it and pushes the image to
the builds' own repository (gpu-dev-builds) with the context's sha256 as tag. One build per
context hash, whoever asks: the same context again reuses the image at once.

`ImageBuilds` is the one service the API's routes (`functions/api/routes/images.py`) and
the reservation state machine's `build_image` task (lifecycle/building.py) use. The
clients (S3, CodeBuild, CloudWatch Logs, ECR) are handed in; `deployed()` makes this
environment's. Reading a build's state refreshes it from CodeBuild (`refresh`): a running
build's phase (and docker's "Step 5/12" from its log), a finished one's digest (from ECR)
or its log's tail."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from botocore.exceptions import ClientError

from gpudev.errors import InvalidRequest, NotFound, Unavailable
from gpudev.repositories.image_builds import ImageBuildRow, ImageBuildsRepository, OwnedBuild
from gpudev.settings import ImageBuildSettings

CONTEXT_FILE = "Dockerfile.gpu-dev"  # the CLI puts the Dockerfile at this path in the tar
LOG_TAIL_LINES = 30
LOG_TAIL_CHARS = 4_000
# CodeBuild's build statuses (BatchGetBuilds' buildStatus): all but these two are failures.
_RUNNING = "IN_PROGRESS"
_SUCCEEDED = "SUCCEEDED"
# docker's legacy builder prints "Step 5/12 : RUN ...", BuildKit's plain progress
# "#8 [3/12] RUN ...": either gives the step.
_STEP = re.compile(r"(?:^Step (\d+)/(\d+) :|\[\s*(?:\S+\s+)?(\d+)/(\d+)\])")


@dataclass(frozen=True)
class BuildState:
    """What CodeBuild said of a build, read into ours (pure: `read_codebuild_build`)."""

    status: str  # building, succeeded, failed
    phase: str | None
    log_group: str | None = None
    log_stream: str | None = None


class BuildsDisabled(InvalidRequest):
    """This deployment has no CodeBuild project (docs/operator-guide.md)."""


def context_key(context_hash: str) -> str:
    return f"contexts/{context_hash}.tar"


def read_codebuild_build(build: dict[str, Any]) -> BuildState:
    """Our state of a BatchGetBuilds entry: its status and current phase, and where its log
    is (CodeBuild names a group and stream once the build has one)."""
    logs = build.get("logs") or {}
    status = build.get("buildStatus", _RUNNING)
    ours = "building" if status == _RUNNING else "succeeded" if status == _SUCCEEDED else "failed"
    phase = build.get("currentPhase")
    if ours == "failed":
        phase = f"{status.lower().replace('_', ' ')} in {_failed_phase(build) or phase}"
    return BuildState(ours, phase, logs.get("groupName"), logs.get("streamName"))


def _failed_phase(build: dict[str, Any]) -> str | None:
    for phase in build.get("phases") or []:
        if phase.get("phaseStatus") not in (None, "SUCCEEDED"):
            return str(phase.get("phaseType"))
    return None


def build_step(lines: list[str]) -> str | None:
    """The last "step N/M" the build's log shows, if any."""
    for line in reversed(lines):
        found = _STEP.search(line)
        if found:
            now, total = (g for g in found.groups() if g is not None)
            return f"step {now}/{total}"
    return None


def log_tail(lines: list[str]) -> str:
    tail = "\n".join(line.rstrip("\n") for line in lines[-LOG_TAIL_LINES:])
    return tail[-LOG_TAIL_CHARS:]


def status_line(row: ImageBuildRow) -> str:
    """The reservation's status line while it waits for the build."""
    return f"building image: {row.phase.lower() if row.phase else 'starting'}"


class ImageBuilds:
    def __init__(
        self,
        conn: psycopg.Connection[Any],
        settings: ImageBuildSettings,
        *,
        codebuild: Any,
        s3: Any,
        logs: Any,
        ecr: Any,
    ):
        self.rows = ImageBuildsRepository(conn)
        self.settings = settings
        self._codebuild = codebuild
        self._s3 = s3
        self._logs = logs
        self._ecr = ecr

    @classmethod
    def deployed(cls, conn: psycopg.Connection[Any]) -> ImageBuilds:
        from gpudev.aws import aws_clients
        from gpudev.settings import image_build_settings

        clients = aws_clients()
        return cls(
            conn,
            image_build_settings(),
            codebuild=clients.codebuild,
            s3=clients.s3,
            logs=clients.logs,
            ecr=clients.ecr,
        )

    # -- what the image is ---------------------------------------------------------------
    @property
    def repository(self) -> str:
        return self.settings.repository_uri.partition("/")[2]

    def image(self, context_hash: str) -> str:
        return f"{self.settings.repository_uri}:{context_hash}"

    def pull(self, digest: str) -> str:
        return f"{self.settings.repository_uri}@{digest}"

    def require_enabled(self) -> None:
        if not self.settings.enabled:
            raise BuildsDisabled(
                "this deployment builds no images: its operators have not deployed the "
                "CodeBuild project (docs/images.md#built-images)",
                field="dockerfile",
                hint="reserve with --image instead",
            )

    # -- rows ----------------------------------------------------------------------------
    def get(self, context_hash: str) -> ImageBuildRow | None:
        return self.rows.get(context_hash)

    def add_owner(self, context_hash: str, username: str) -> None:
        self.rows.add_owner(context_hash, username)

    def owned_since(self, context_hash: str, username: str) -> datetime | None:
        return self.rows.owned_since(context_hash, username)

    def list_owned(self, username: str, limit: int) -> list[OwnedBuild]:
        return self.rows.list_owned(username, limit)

    # -- the context ---------------------------------------------------------------------
    def upload_url(self, context_hash: str, size_bytes: int) -> str:
        """A presigned PUT of exactly `size_bytes` to the context's key."""
        return str(
            self._s3.generate_presigned_url(
                "put_object",
                Params={
                    "Bucket": self.settings.context_bucket,
                    "Key": context_key(context_hash),
                    "ContentLength": size_bytes,
                    "ContentType": "application/x-tar",
                },
                ExpiresIn=self.settings.upload_url_seconds,
            )
        )

    def context_uploaded(self, context_hash: str) -> bool:
        try:
            self._s3.head_object(Bucket=self.settings.context_bucket, Key=context_key(context_hash))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise Unavailable("the context bucket did not answer; try again") from error
        return True

    # -- the build -----------------------------------------------------------------------
    def start(self, context_hash: str, retry_failed_before: datetime) -> ImageBuildRow:
        """The build of `context_hash`: one that stands, or one started now (a failed one
        finished before `retry_failed_before` is built again, and so is a succeeded one
        whose image ECR no longer has)."""
        existing = self.standing(context_hash)
        if existing is not None and not _claimable(
            existing, retry_failed_before, self.settings.claim_seconds
        ):
            return existing
        if not self.context_uploaded(context_hash):
            raise NotFound(
                f"no uploaded context {context_hash[:12]}: upload it first (the CLI does)",
                field="context_hash",
            )
        claimed = self.rows.claim(context_hash, retry_failed_before, self.settings.claim_seconds)
        if claimed is None:  # another caller claimed it between the two reads
            again = self.get(context_hash)
            assert again is not None
            return again
        try:
            answer = self._codebuild.start_build(
                projectName=self.settings.project,
                # The same claim asking twice (a retried call) gets the same build.
                idempotencyToken=idempotency_token(context_hash, claimed.claimed_at),
                environmentVariablesOverride=[
                    {"name": "IMAGE_TAG", "value": context_hash, "type": "PLAINTEXT"},
                    {
                        "name": "CONTEXT_KEY",
                        "value": context_key(context_hash),
                        "type": "PLAINTEXT",
                    },
                ],
            )
        except ClientError as error:
            # The claim is released at once: the next ask tries again, not after the window.
            self.rows.release(context_hash, claimed.claimed_at)
            raise Unavailable("CodeBuild did not start the build; try again") from error
        build = answer["build"]
        started = self.rows.started(context_hash, build["id"], build.get("currentPhase"))
        return started or claimed

    def standing(self, context_hash: str) -> ImageBuildRow | None:
        """The context's build row; a succeeded one whose image ECR has expired (or lost) is
        reopened as failed now, so that the next claim builds it again."""
        row = self.get(context_hash)
        if row is None or row.status != "succeeded":
            return row
        digest, _ = self._pushed(context_hash)
        if digest is not None:
            return row
        gone = self.rows.image_gone(context_hash)
        return gone or self.get(context_hash)

    def refresh(self, row: ImageBuildRow) -> ImageBuildRow:
        """A building row brought up to date with CodeBuild; others as they are."""
        if row.status != "building" or row.build_id is None:
            return row
        try:
            builds = self._codebuild.batch_get_builds(ids=[row.build_id]).get("builds") or []
        except ClientError as error:
            raise Unavailable("CodeBuild did not answer; try again") from error
        if not builds:
            return self._finish(row, "failed", "build not found in CodeBuild", None, None, "")
        state = read_codebuild_build(builds[0])
        if state.status == "building":
            phase = state.phase
            if phase == "BUILD":
                step = build_step(self._log_lines(state, limit=50))
                phase = f"BUILD, {step}" if step else phase
            if phase == row.phase:
                return row
            updated = self.rows.progress(row.context_hash, row.build_id, phase)
            return updated or row
        if state.status == "succeeded":
            digest, size = self._pushed(row.context_hash)
            if digest is None:
                return self._finish(
                    row, "failed", state.phase, None, None, "the build pushed no image"
                )
            return self._finish(row, "succeeded", "COMPLETED", digest, size, None)
        digest, size = self._pushed(row.context_hash)
        if digest is not None:  # another build of the same context pushed the tag first
            return self._finish(row, "succeeded", "COMPLETED", digest, size, None)
        tail = log_tail(self._log_lines(state, limit=LOG_TAIL_LINES))
        return self._finish(row, "failed", state.phase, None, None, tail or "(no build log)")

    def _finish(
        self,
        row: ImageBuildRow,
        status: str,
        phase: str | None,
        digest: str | None,
        size: int | None,
        tail: str | None,
    ) -> ImageBuildRow:
        finished = self.rows.finish(row, status, phase, digest, size, tail)
        return finished or (self.get(row.context_hash) or row)

    def _pushed(self, context_hash: str) -> tuple[str | None, int | None]:
        try:
            answer = self._ecr.describe_images(
                repositoryName=self.repository, imageIds=[{"imageTag": context_hash}]
            )
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            if code in ("ImageNotFoundException", "RepositoryNotFoundException"):
                return None, None
            raise Unavailable("ECR did not answer; try again") from error
        details = answer.get("imageDetails") or []
        if not details:
            return None, None
        return details[0]["imageDigest"], details[0].get("imageSizeInBytes")

    def _log_lines(self, state: BuildState, limit: int) -> list[str]:
        if not (state.log_group and state.log_stream):
            return []
        try:
            events = self._logs.get_log_events(
                logGroupName=state.log_group,
                logStreamName=state.log_stream,
                limit=limit,
                startFromHead=False,
            ).get("events", [])
        except ClientError:
            return []  # the log is a courtesy: the build's state stands without it
        return [str(e.get("message", "")) for e in events]


def idempotency_token(context_hash: str, claimed_at: datetime) -> str:
    """StartBuild's token for one claim of a context (CodeBuild keeps it five minutes)."""
    return hashlib.sha256(f"{context_hash}:{claimed_at.isoformat()}".encode()).hexdigest()[:64]


def _claimable(row: ImageBuildRow, retry_failed_before: datetime, claim_seconds: int) -> bool:
    """As claim.sql decides."""
    if row.status == "failed":
        return row.finished_at is not None and row.finished_at < retry_failed_before
    return (
        row.status == "building"
        and row.build_id is None
        and (datetime.now(UTC) - row.claimed_at).total_seconds() > claim_seconds
    )
