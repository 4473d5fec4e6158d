"""The image reference parser (gpudev/images/reference.py): what the Docker grammar takes,
normalized, and every malformed input refused with the part at fault (a 400 in the API)."""

from __future__ import annotations

import pytest

from gpudev.errors import MalformedInput
from gpudev.images.reference import (
    ImageReference,
    MalformedImageReference,
    parse_image_reference,
)

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ubuntu", ImageReference("docker.io", "library/ubuntu", "latest")),
        ("ubuntu:24.04", ImageReference("docker.io", "library/ubuntu", "24.04")),
        (
            "pytorch/pytorch:2.8.0-cuda12.9",
            ImageReference("docker.io", "pytorch/pytorch", "2.8.0-cuda12.9"),
        ),
        ("docker.io/ubuntu", ImageReference("docker.io", "library/ubuntu", "latest")),
        (
            "index.docker.io/pytorch/pytorch",
            ImageReference("docker.io", "pytorch/pytorch", "latest"),
        ),
        (
            "ghcr.io/pytorch/pytorch-nightly:latest",
            ImageReference("ghcr.io", "pytorch/pytorch-nightly", "latest"),
        ),
        (
            "public.ecr.aws/docker/library/python:3.12",
            ImageReference("public.ecr.aws", "docker/library/python", "3.12"),
        ),
        (f"ubuntu@{DIGEST}", ImageReference("docker.io", "library/ubuntu", None, DIGEST)),
        (f"ubuntu:24.04@{DIGEST}", ImageReference("docker.io", "library/ubuntu", "24.04", DIGEST)),
        ("localhost:5000/team/img:v1", ImageReference("localhost:5000", "team/img", "v1")),
        ("localhost/img", ImageReference("localhost", "img", "latest")),
        ("Registry.Example.com/a/b", ImageReference("registry.example.com", "a/b", "latest")),
        ("a/b__c/d-e/f.g:_T-1.x", ImageReference("docker.io", "a/b__c/d-e/f.g", "_T-1.x")),
        (
            "123456789012.dkr.ecr.us-east-2.amazonaws.com/gpu-dev-images/team:1",
            ImageReference(
                "123456789012.dkr.ecr.us-east-2.amazonaws.com", "gpu-dev-images/team", "1"
            ),
        ),
    ],
)
def test_a_reference_in_the_grammar_is_read_and_normalized(text: str, expected: ImageReference):
    assert parse_image_reference(text) == expected


def test_a_normalized_reference_prints_back_as_the_registry_its_path_tag_and_digest():
    assert str(parse_image_reference(f"ubuntu:24.04@{DIGEST}")) == (
        f"docker.io/library/ubuntu:24.04@{DIGEST}"
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        (" ubuntu", "spaces"),
        ("ubuntu ", "spaces"),
        ("ubu ntu", "spaces"),
        ("ubuntu\n", "spaces"),
        ("ubuntu\x00", "control"),
        ("a" * 513, "longer than 512"),
        ("Ubuntu", "lower-case"),
        ("pytorch/PyTorch", "lower-case"),
        ("a//b", "empty path component"),
        ("/ubuntu", "empty path component"),
        ("ubuntu/", "empty path component"),
        ("a-/b", "lower-case"),
        ("-a", "lower-case"),
        ("a..b", "lower-case"),
        ("a___b", "lower-case"),
        ("ubuntu:", "tag"),
        ("ubuntu:-x", "tag"),
        ("ubuntu:.x", "tag"),
        ("ubuntu:" + "t" * 129, "tag"),
        ("ubuntu:a/b", "host name"),  # a ":" before a "/" is a registry's port
        ("ubuntu:t:u", "no repository"),
        (":tag", "no name"),
        ("ubuntu@", "digest"),
        ("ubuntu@sha256:abc", "digest"),
        ("ubuntu@sha512:" + "a" * 128, "digest"),
        ("ubuntu@sha256:" + "A" * 64, "digest"),
        (f"@{DIGEST}", "no name"),
        (f"ubuntu@{DIGEST}@{DIGEST}", "digest"),
        ("-bad.example.com/a", "host name"),
        ("bad_host.example.com/a", "host name"),
        ("example.com:99999/a", "port"),
        ("example.com:0/a", "port"),
        ("example.com:/a", "host name"),
        ("localhost:5000", "no repository"),
        ("[::1]:5000/a", "host name"),
        ("a" * 256 + "/b", "longer than 255"),
        ("ubuntu;rm -rf", "spaces"),
        ("ubuntu$(id)", "lower-case"),
    ],
)
def test_a_malformed_reference_is_refused_with_what_is_wrong(text: str, problem: str):
    with pytest.raises(MalformedImageReference, match=problem) as refused:
        parse_image_reference(text)
    assert isinstance(refused.value, MalformedInput)  # 400, not 422
    assert refused.value.field == "image"
    assert "[registry/]repository" in (refused.value.allowed or "")
