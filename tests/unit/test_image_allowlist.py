"""The operator's image allowlist (gpudev/images/allowlist.py) and the digest resolution
against ECR (moto's, the boundary) in gpudev/images/resolve.py."""

from __future__ import annotations

import json

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from gpudev.errors import InvalidRequest, MalformedInput, Unavailable
from gpudev.images.allowlist import (
    PULL_THROUGH_PREFIXES,
    BadImagePattern,
    ImageNotAllowed,
    ImagePolicy,
    parse_image_patterns,
)
from gpudev.images.resolve import ImageNotFound, ImageNotReadable, ImageResolver

REGISTRY = "123456789012.dkr.ecr.us-east-2.amazonaws.com"
DEFAULT = "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"


def policy(patterns: str) -> ImagePolicy:
    return ImagePolicy(DEFAULT, parse_image_patterns(patterns), REGISTRY)


@pytest.mark.parametrize(
    "allowed",
    [
        "ghcr.io/pytorch/pytorch-nightly:latest",
        "ghcr.io/pytorch/ci/deep/image:1",
        "docker.io/nvidia/cuda:12.4.1-devel-ubuntu22.04",
        "nvidia/cuda:12.4.1-devel-ubuntu22.04",
        "ubuntu:24.04",  # docker.io/library/ubuntu
        f"{REGISTRY}/gpu-dev-images/team:1",
        "public.ecr.aws/docker/library/python:3.12",
        DEFAULT,
        f"docker.io/{DEFAULT}",
    ],
)
def test_an_image_a_pattern_or_the_default_names_is_allowed(allowed: str):
    patterns = (
        "ghcr.io/pytorch/*, docker.io/nvidia/cuda, docker.io/library/ubuntu,"
        " ecr/gpu-dev-images/*, public.ecr.aws/*"
    )
    assert policy(patterns).check(allowed)


@pytest.mark.parametrize(
    "refused",
    [
        "ghcr.io/pytorchx/pytorch:1",  # a prefix is a whole path component
        "ghcr.io/pytorch:1",  # the prefix itself is no repository under it
        "public.ecr.awsx/a:1",
        "docker.io/nvidia/cuda-extra:1",  # an exact repository is exact
        "docker.io.example.com/nvidia/cuda:1",  # the registry is matched exactly
        "quay.io/pytorch/x:1",
        "123456789013.dkr.ecr.us-east-2.amazonaws.com/gpu-dev-images/team:1",  # another account
        f"{REGISTRY}/other/team:1",
        "pytorch/pytorch:2.7.0",  # the default's repository with another tag
        "debian:12",
    ],
)
def test_an_image_no_pattern_names_is_refused_with_what_is_allowed(refused: str):
    patterns = "ghcr.io/pytorch/*, docker.io/nvidia/cuda, ecr/gpu-dev-images/*, public.ecr.aws/*"
    with pytest.raises(ImageNotAllowed, match="is not allowed here") as error:
        policy(patterns).check(refused)
    assert "; public.ecr.aws/*" in error.value.message
    assert "; docker.io/nvidia/cuda;" in error.value.message
    assert isinstance(error.value, InvalidRequest)  # 422
    assert "ghcr.io/pytorch/*" in error.value.message
    assert f"{REGISTRY}/gpu-dev-images/*" in error.value.message
    assert DEFAULT in error.value.message


def test_with_no_patterns_only_the_default_image_is_allowed():
    assert policy("").check(DEFAULT)
    with pytest.raises(ImageNotAllowed):
        policy("").check("ubuntu:24.04")


def test_a_malformed_reference_is_refused_before_the_allowlist_is_read():
    with pytest.raises(MalformedInput):
        policy("public.ecr.aws/*").check("public.ecr.aws/UPPER:1")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("ghcr.io", "registry/repository"),
        ("/pytorch", "registry/repository"),
        ("quay.io/pytorch/*", "pull-through cache rule"),
        ("nvcr.io/nvidia/*", "NGC"),
        ("ghcr.io/Py/*", "lower-case"),
        ("ghcr.io/py*/x", "lower-case"),
        ("ghcr.io/*/x", "lower-case"),
        ("ecr/*", "name a repository"),
        ("*.io/x", "pull-through cache rule"),
    ],
)
def test_a_bad_allowlist_entry_fails_naming_itself(entry: str, problem: str):
    with pytest.raises(BadImagePattern, match=problem):
        parse_image_patterns(f"ghcr.io/pytorch/*,{entry}")


def test_upstream_images_are_read_from_their_pull_through_cache_repository():
    allowed = policy("ghcr.io/pytorch/*, public.ecr.aws/*, ecr/gpu-dev-images/*")
    assert allowed.source_repository(allowed.check("ghcr.io/pytorch/x:1")) == "github/pytorch/x"
    assert allowed.source_repository(allowed.check("ubuntu:24.04" if False else DEFAULT)) == (
        "docker-hub/pytorch/pytorch"
    )
    own = allowed.check(f"{REGISTRY}/gpu-dev-images/team:1")
    assert allowed.source_repository(own) == "gpu-dev-images/team"


def test_the_pull_through_prefixes_are_the_rules_cdk_declares():
    from cdk_app.images import PULL_THROUGH_RULES

    assert {rule.upstream: rule.prefix for rule in PULL_THROUGH_RULES} == PULL_THROUGH_PREFIXES


def _manifest(size: int, layer: str) -> str:
    return json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": {
                "mediaType": "application/vnd.docker.container.image.v1+json",
                "size": size,
                "digest": "sha256:" + "c" * 64,
            },
            "layers": [
                {
                    "mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                    "size": size,
                    "digest": "sha256:" + layer * 64,
                }
            ],
        }
    )


@pytest.fixture
def ecr():
    with mock_aws():
        client = boto3.client("ecr", region_name="us-east-2")
        client.create_repository(repositoryName="github/pytorch/pytorch-nightly")
        client.put_image(
            repositoryName="github/pytorch/pytorch-nightly",
            imageManifest=_manifest(1000, "d"),
            imageTag="latest",
        )
        yield client


def test_an_allowed_image_resolves_to_its_digest_and_the_pod_runs_that_digest(ecr):
    resolver = ImageResolver(ecr, policy("ghcr.io/pytorch/*"))
    resolved = resolver.resolve("ghcr.io/pytorch/pytorch-nightly")
    digest = ecr.describe_images(repositoryName="github/pytorch/pytorch-nightly")["imageDetails"][
        0
    ]["imageDigest"]
    assert resolved.reference == "ghcr.io/pytorch/pytorch-nightly:latest"
    assert resolved.digest == digest
    assert resolved.pull == f"{REGISTRY}/github/pytorch/pytorch-nightly@{digest}"
    by_digest = resolver.resolve(f"ghcr.io/pytorch/pytorch-nightly@{digest}")
    assert by_digest.pull == resolved.pull


@pytest.mark.parametrize(
    "missing",
    [
        "ghcr.io/pytorch/pytorch-nightly:no-such-tag",
        "ghcr.io/pytorch/no-such-repository:latest",
        "ghcr.io/pytorch/pytorch-nightly@sha256:" + "e" * 64,
    ],
)
def test_an_allowed_image_the_registry_lacks_is_refused_as_missing(ecr, missing: str):
    with pytest.raises(ImageNotFound, match="does not exist") as error:
        ImageResolver(ecr, policy("ghcr.io/pytorch/*")).resolve(missing)
    assert isinstance(error.value, InvalidRequest)


def test_a_refused_image_never_reaches_the_registry():
    class NoRegistry:
        def batch_get_image(self, **_: object) -> None:
            raise AssertionError("asked the registry")

    with pytest.raises(ImageNotAllowed):
        ImageResolver(NoRegistry(), policy("ghcr.io/pytorch/*")).resolve("debian:12")
    with pytest.raises(MalformedInput):
        ImageResolver(NoRegistry(), policy("ghcr.io/pytorch/*")).resolve("Debian")


class NoRegistry:
    def batch_get_image(self, **_: object) -> None:
        raise AssertionError("asked the registry")


@pytest.mark.parametrize("default", [DEFAULT, f"docker.io/{DEFAULT}"])
@pytest.mark.parametrize("patterns", ["", "ghcr.io/pytorch/*, docker.io/pytorch/*"])
def test_the_default_image_is_exactly_no_image_and_never_asks_the_registry(
    default: str, patterns: str
):
    # Whether or not a pattern also names it: the pod runs podImage, as without --image.
    assert ImageResolver(NoRegistry(), policy(patterns)).resolve(default) is None


def _stubbed_ecr(code: str, status: int) -> tuple[object, Stubber]:
    client = boto3.client(
        "ecr",
        region_name="us-east-2",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    stubber = Stubber(client)
    stubber.add_client_error("batch_get_image", service_error_code=code, http_status_code=status)
    return client, stubber


def test_a_repository_the_deployment_may_not_read_is_a_permanent_422_not_a_retry():
    client, stubber = _stubbed_ecr("AccessDeniedException", 400)
    with stubber, pytest.raises(ImageNotReadable, match="cannot read its repository") as error:
        ImageResolver(client, policy("ghcr.io/pytorch/*")).resolve("ghcr.io/pytorch/x:1")
    assert isinstance(error.value, InvalidRequest) and not isinstance(error.value, Unavailable)
    assert error.value.field == "image"
    assert "github/pytorch/x" in error.value.message
    assert error.value.hint is not None and "ecr:BatchGetImage" in error.value.hint
    stubber.assert_no_pending_responses()


def test_a_registry_fault_is_still_a_retryable_503():
    client, stubber = _stubbed_ecr("ServerException", 500)
    with stubber, pytest.raises(Unavailable, match="try again"):
        ImageResolver(client, policy("ghcr.io/pytorch/*")).resolve("ghcr.io/pytorch/x:1")
