"""Images built from a Dockerfile (docs/images.md#built-images): the caller asks where to
upload a build context (a presigned S3 PUT, or nothing when its build stands), starts its
build, follows it, and lists what they built. Every route acts on the caller's own
contexts only: another user's is not found.

Each route imports its service when it runs (bench/cold_start.py)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path

from gpudev.image_builds.schemas import (
    CONTEXT_HASH_PATTERN,
    BuildList,
    BuildRequest,
    BuildShown,
    UploadAnswer,
    UploadRequest,
)
from routes.answers import answers
from routes.caller import ForCaller

router = Router()
ContextHash = Annotated[
    str, Path(pattern=CONTEXT_HASH_PATTERN, description="a build context's sha256")
]
NO_BUILDS = (
    "this deployment builds no images, or the context is over its size limit: nothing was "
    "written; `field` says which"
)


@router.post(
    "/v1/images/uploads",
    responses=answers(
        200,
        UploadAnswer,
        "where to PUT the context, or that its build stands (nothing to upload)",
        422,
        body=True,
        meanings={422: NO_BUILDS},
    ),
)
def request_context_upload(request: UploadRequest, caller: ForCaller) -> UploadAnswer:
    from gpudev.image_builds.requests import request_upload

    return caller.read(request_upload, request)


@router.post(
    "/v1/images/builds",
    responses=answers(
        200,
        BuildShown,
        "the context's build: started now, running, or done",
        404,
        422,
        429,
        body=True,
        meanings={
            404: "no such context among the caller's, or it was never uploaded: nothing "
            "was started",
            422: NO_BUILDS,
            429: "the caller has as many builds running as the deployment allows: nothing "
            "was started",
        },
    ),
)
def start_image_build(request: BuildRequest, caller: ForCaller) -> BuildShown:
    from gpudev.image_builds.requests import request_build

    return caller.read(request_build, request.context_hash, retry=request.retry)


@router.get(
    "/v1/images/builds/<context_hash>",
    responses=answers(200, BuildShown, "the context's build, as CodeBuild says now", 404, 422),
)
def read_image_build(context_hash: ContextHash, caller: ForCaller) -> BuildShown:
    from gpudev.image_builds.requests import read_build

    return caller.read(read_build, context_hash)


@router.get(
    "/v1/images",
    responses=answers(200, BuildList, "the caller's contexts and their builds, newest first"),
)
def list_image_builds(caller: ForCaller) -> BuildList:
    from gpudev.image_builds.requests import list_builds

    return caller.read(list_builds)
