"""Image builds here (docs/images.md#built-images, docs/local-cloud.md): the resources
cdk_app/image_builds.py declares for `reserve --dockerfile`, made in moto (the context
bucket, the builds' own repository, the CodeBuild project with the variables its buildspec
reads), and the environment that points the functions at them. The builds themselves are
simulated by moto_codebuild.py."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

CONTEXT_BUCKET = "gpu-dev-build-contexts"
BUILDS_REPOSITORY = "gpu-dev-builds"  # cdk_app/image_builds.py BUILDS_REPOSITORY
PROJECT = "gpu-dev-image-builds"


def prepare_image_builds(
    client: Callable[[str], Any], account_id: str, region: str, poll_seconds: int
) -> dict[str, str]:
    """Make the resources (a restart finds them made) and return the functions' settings."""
    s3 = client("s3")
    with contextlib.suppress(s3.exceptions.BucketAlreadyOwnedByYou):
        s3.create_bucket(
            Bucket=CONTEXT_BUCKET, CreateBucketConfiguration={"LocationConstraint": region}
        )
    ecr = client("ecr")
    with contextlib.suppress(ecr.exceptions.RepositoryAlreadyExistsException):
        ecr.create_repository(
            repositoryName=BUILDS_REPOSITORY,
            imageTagMutability="IMMUTABLE",
            imageScanningConfiguration={"scanOnPush": True},
            encryptionConfiguration={"encryptionType": "KMS"},
        )
    uri = f"{account_id}.dkr.ecr.{region}.amazonaws.com/{BUILDS_REPOSITORY}"
    codebuild = client("codebuild")
    with contextlib.suppress(codebuild.exceptions.ResourceAlreadyExistsException):
        codebuild.create_project(
            name=PROJECT,
            # NO_SOURCE in CDK (the buildspec copies the context itself); moto insists on a
            # source location, which the simulation never reads.
            source={"type": "S3", "location": f"{CONTEXT_BUCKET}/contexts/"},
            artifacts={"type": "NO_ARTIFACTS"},
            environment={
                "type": "LINUX_CONTAINER",
                "image": "aws/codebuild/standard:7.0",
                "computeType": "BUILD_GENERAL1_MEDIUM",
                "privilegedMode": True,
                "environmentVariables": [
                    {"name": "CONTEXT_BUCKET", "value": CONTEXT_BUCKET, "type": "PLAINTEXT"},
                    {"name": "REPOSITORY_URI", "value": uri, "type": "PLAINTEXT"},
                ],
            },
            serviceRole=f"arn:aws:iam::{account_id}:role/gpu-dev-image-builds",
        )
    return {
        "IMAGE_BUILD_PROJECT": PROJECT,
        "IMAGE_BUILD_CONTEXT_BUCKET": CONTEXT_BUCKET,
        "IMAGE_BUILD_REPOSITORY_URI": uri,
        "IMAGE_BUILD_POLL_SECONDS": str(poll_seconds),
    }
