"""What the image routes take and answer (functions/api/routes/images.py), shared with the
CLI through the OpenAPI document."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

CONTEXT_HASH_PATTERN = r"^[a-f0-9]{64}$"


class UploadRequest(BaseModel):
    context_hash: str = Field(
        pattern=CONTEXT_HASH_PATTERN,
        description="the sha256 of the context tar as it will be uploaded (64 hex digits)",
    )
    size_bytes: int = Field(ge=1, description="the tar's size; at most the deployment's limit")


class UploadAnswer(BaseModel):
    context_hash: str
    # upload: PUT the tar to upload_url; built or building: nothing to upload, the build stands
    action: Literal["upload", "built", "building"]
    upload_url: str | None = Field(
        default=None, description="with action upload: a presigned S3 PUT of exactly size_bytes"
    )
    image: str | None = Field(default=None, description="with action built: the image")


class BuildRequest(BaseModel):
    context_hash: str = Field(
        pattern=CONTEXT_HASH_PATTERN, description="an uploaded context's sha256"
    )
    retry: bool = Field(
        default=False,
        description="build a failed context again now (otherwise only once it failed "
        "over the deployment's retry wait ago)",
    )


class BuildShown(BaseModel):
    """A context the caller uploaded and its build."""

    context_hash: str
    status: Literal["uploaded", "building", "succeeded", "failed"]
    phase: str | None = Field(default=None, description="CodeBuild's phase, or the step")
    image: str | None = Field(default=None, description="the built image (repository:tag)")
    image_digest: str | None = None
    size_bytes: int | None = Field(default=None, description="the image's size in ECR")
    uploaded_at: datetime
    finished_at: datetime | None = None
    log_tail: str | None = Field(default=None, description="a failed build's log, its end")


class BuildList(BaseModel):
    builds: list[BuildShown]
