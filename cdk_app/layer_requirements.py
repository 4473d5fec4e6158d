"""The shared layer's requirements: the runtime closure of uv.lock, minus what Lambda's
Python runtime already provides (boto3 and its dependencies)."""

from __future__ import annotations

import subprocess

from cdk_app.paths import uv_executable

PROVIDED_BY_LAMBDA = ("boto3", "botocore", "s3transfer", "jmespath")
HEADER = (
    "# Runtime of the shared Lambda layer, exported from uv.lock by `make layer-requirements`.\n"
    "# boto3/botocore come from the Lambda runtime (see docs/decisions.md).\n"
)


def layer_requirements() -> str:
    command = [
        uv_executable(),
        "export",
        "--frozen",
        "--no-default-groups",
        "--no-emit-project",
        "--no-hashes",
        "--no-header",
        "--no-annotate",
    ]
    for package in PROVIDED_BY_LAMBDA:
        command += ["--no-emit-package", package]
    exported = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return HEADER + exported


if __name__ == "__main__":
    print(layer_requirements(), end="")
