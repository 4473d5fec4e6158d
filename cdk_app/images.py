"""Images for dev servers (docs/images.md): the team's ECR repository, the ECR pull-through
cache rules nodes pull upstream images through, the allowlist the API checks `reserve
--image` against (CDK context `gpudev:allowedImages`), and the IAM that goes with them.

- `gpu-dev-images` holds the team's images (built ones go to `gpu-dev-builds`,
  cdk_app/image_builds.py): immutable tags, scanned on push, untagged
  images expire after 7 days and at most 200 images are kept.
- One pull-through cache rule per upstream (`PULL_THROUGH_RULES`). Docker Hub and GitHub's
  registry take credentials only: their rule exists when the operator gives the ARN of a
  Secrets Manager secret named `ecr-pullthroughcache/...` (CDK context
  `gpudev:pullThroughCredentials`, {"docker.io": arn, "ghcr.io": arn}); ECR Public needs none.
  A repository creation template gives the repositories the cache creates the same
  lifecycle. NGC (nvcr.io) is not an upstream ECR's cache takes: mirror its images into
  `gpu-dev-images`.
- The API reads image metadata (BatchGetImage, DescribeImages) only in the allowed
  repositories; under a pull-through prefix its BatchGetImage may also import the image and
  create its cached repository (the two actions AWS authorizes BatchGetImage with there).
- Nodes (cdk_app/cluster_stack.py) may import through the same prefixes.

Infrastructure never imports runtime code: gpudev/images/allowlist.py states the same
prefixes, and tests/unit/test_image_allowlist.py keeps the two in step."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from aws_cdk import Acknowledgment, Aws, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from cdk_app.image_builds import build_image_builds

ALLOWED_IMAGES_CONTEXT = "gpudev:allowedImages"
TOOLS_IMAGE_CONTEXT = "gpudev:toolsImage"  # deploy/tools-image: sshd, sudo, bash, busybox
CREDENTIALS_CONTEXT = "gpudev:pullThroughCredentials"
TEAM_REPOSITORY = "gpu-dev-images"
OWN_REGISTRY = "ecr"  # an allowlist entry's registry: this deployment's ECR
UNTAGGED_DAYS = 7
MAX_IMAGES = 200
_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*$")


@dataclass(frozen=True)
class PullThroughRule:
    upstream: str  # the registry users name in references
    prefix: str  # the ECR repository prefix its images are cached under
    upstream_url: str  # what ECR calls the upstream
    needs_credentials: bool


PULL_THROUGH_RULES = (
    PullThroughRule("docker.io", "docker-hub", "registry-1.docker.io", needs_credentials=True),
    PullThroughRule("ghcr.io", "github", "ghcr.io", needs_credentials=True),
    PullThroughRule("public.ecr.aws", "ecr-public", "public.ecr.aws", needs_credentials=False),
)


def allowed_images(scope: Construct) -> list[str]:
    """The operator's allowlist entries, checked at synth: `registry/repository` or
    `registry/prefix/*`, the registry `ecr` or one with a pull-through cache rule."""
    raw = scope.node.try_get_context(ALLOWED_IMAGES_CONTEXT)
    if raw is None or raw == "":
        return []
    entries = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        raise ValueError(f"context {ALLOWED_IMAGES_CONTEXT}: a list of patterns; got {raw!r}")
    checked = [e.strip() for e in entries if e.strip()]
    upstreams = {rule.upstream for rule in PULL_THROUGH_RULES}
    for entry in checked:
        registry, _, path = entry.partition("/")
        if registry == "nvcr.io":
            raise ValueError(
                f"context {ALLOWED_IMAGES_CONTEXT}: {entry!r}: ECR's pull-through cache does "
                f"not take NGC; mirror its images into {TEAM_REPOSITORY} and allow "
                f"ecr/{TEAM_REPOSITORY}/..."
            )
        if registry != OWN_REGISTRY and registry not in upstreams:
            raise ValueError(
                f"context {ALLOWED_IMAGES_CONTEXT}: {entry!r}: the registry must be "
                f"{OWN_REGISTRY!r} or one of {', '.join(sorted(upstreams))}"
            )
        repository = path.removesuffix("*").removesuffix("/")
        if path != "*" and not (repository and all(map(_COMPONENT.match, repository.split("/")))):
            raise ValueError(
                f"context {ALLOWED_IMAGES_CONTEXT}: {entry!r}: registry/repository or "
                "registry/prefix/*, lower-case path components"
            )
        if registry == OWN_REGISTRY and not repository:
            raise ValueError(f"context {ALLOWED_IMAGES_CONTEXT}: {entry!r}: name a repository")
    return checked


def pull_through_credentials(scope: Construct) -> dict[str, str]:
    raw = scope.node.try_get_context(CREDENTIALS_CONTEXT) or {}
    if isinstance(raw, str):
        raw = json.loads(raw)
    upstreams = {r.upstream for r in PULL_THROUGH_RULES if r.needs_credentials}
    if not isinstance(raw, dict) or not set(raw) <= upstreams:
        raise ValueError(
            f"context {CREDENTIALS_CONTEXT}: {{registry: secret ARN}} for "
            f"{', '.join(sorted(upstreams))}; got {raw!r}"
        )
    for registry, arn in raw.items():
        if not (isinstance(arn, str) and ":secret:ecr-pullthroughcache/" in arn):
            raise ValueError(
                f"context {CREDENTIALS_CONTEXT}: {registry}: the ARN of a Secrets Manager "
                f"secret named ecr-pullthroughcache/...; got {arn!r}"
            )
    return dict(raw)


def active_rules(scope: Construct) -> list[PullThroughRule]:
    """The rules this deployment declares: those that need credentials only with them."""
    credentials = pull_through_credentials(scope)
    return [r for r in PULL_THROUGH_RULES if not r.needs_credentials or r.upstream in credentials]


def _lifecycle_rules() -> list[ecr.LifecycleRule]:
    return [
        ecr.LifecycleRule(
            rule_priority=1,
            description=f"untagged images go after {UNTAGGED_DAYS} days",
            tag_status=ecr.TagStatus.UNTAGGED,
            max_image_age=Duration.days(UNTAGGED_DAYS),
        ),
        ecr.LifecycleRule(
            rule_priority=2,
            description=f"at most {MAX_IMAGES} images",
            tag_status=ecr.TagStatus.ANY,
            max_image_count=MAX_IMAGES,
        ),
    ]


def _repository_arn(name: str) -> str:
    return f"arn:{Aws.PARTITION}:ecr:{Aws.REGION}:{Aws.ACCOUNT_ID}:repository/{name}"


def _acknowledge_prefixes(scope: Construct, names: set[str], reason: str) -> None:
    """cdk-nag IAM5 for each repository prefix (`…/*`) granted: the allowlist's own
    wildcards, or a cache prefix whose repositories are created on first pull."""
    for name in sorted(n for n in names if n.endswith("*")):
        Validations.of(scope).acknowledge(
            Acknowledgment(
                id="AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ecr:"
                f"<AWS::Region>:<AWS::AccountId>:repository/{name}]",
                reason=reason,
            )
        )


def tools_image(scope: Construct) -> str:
    """The tools image every dev pod copies sshd, sudo and a shell from (one word; none: the
    images bring their own, or apt-get installs them at boot)."""
    raw = scope.node.try_get_context(TOOLS_IMAGE_CONTEXT)
    if raw is None or raw == "":
        return ""
    if not isinstance(raw, str) or raw.split() != [raw]:
        raise ValueError(f"context {TOOLS_IMAGE_CONTEXT}: an image reference; got {raw!r}")
    return raw


def build_images(
    stack: Stack, api_function: lambda_.Function, tasks_function: lambda_.Function
) -> ecr.Repository:
    """The repository, the cache rules, the API's allowlist and ECR reads, and the
    reservation tasks' tools image."""
    entries = allowed_images(stack)
    rules = active_rules(stack)
    credentials = pull_through_credentials(stack)
    cached = {r.upstream for r in rules}
    uncached = sorted({e.partition("/")[0] for e in entries} - cached - {OWN_REGISTRY})
    if uncached:
        raise ValueError(
            f"context {ALLOWED_IMAGES_CONTEXT}: {', '.join(uncached)} needs its pull-through "
            f"cache rule, which needs credentials: give the secret's ARN in "
            f"{CREDENTIALS_CONTEXT}"
        )
    repository = ecr.Repository(
        stack,
        "TeamImages",
        repository_name=TEAM_REPOSITORY,
        image_scan_on_push=True,
        image_tag_mutability=ecr.TagMutability.IMMUTABLE,
        lifecycle_rules=_lifecycle_rules(),
        removal_policy=RemovalPolicy.RETAIN,
    )
    for rule in rules:
        ecr.CfnPullThroughCacheRule(
            stack,
            f"PullThrough{rule.prefix.title().replace('-', '')}",
            ecr_repository_prefix=rule.prefix,
            upstream_registry_url=rule.upstream_url,
            credential_arn=credentials.get(rule.upstream),
        )
    if rules:
        ecr.CfnRepositoryCreationTemplate(
            stack,
            "PullThroughRepositories",
            prefix="ROOT",
            applied_for=["PULL_THROUGH_CACHE"],
            description="repositories the pull-through cache creates: the team lifecycle",
            image_tag_mutability="MUTABLE",  # a cached tag follows its upstream
            lifecycle_policy=json.dumps(
                {
                    "rules": [
                        {
                            "rulePriority": 1,
                            "description": f"at most {MAX_IMAGES} images per repository",
                            "selection": {
                                "tagStatus": "any",
                                "countType": "imageCountMoreThan",
                                "countNumber": MAX_IMAGES,
                            },
                            "action": {"type": "expire"},
                        }
                    ]
                }
            ),
        )
    build_image_builds(stack, [api_function, tasks_function])
    api_function.add_environment("ALLOWED_IMAGES", ",".join(entries))
    tasks_function.add_environment("LIFECYCLE_TOOLS_IMAGE", tools_image(stack))
    _grant_api_reads(api_function, entries)
    return repository


def _grant_api_reads(function: lambda_.Function, entries: list[str]) -> None:
    """BatchGetImage and DescribeImages on the allowed repositories only; under a cache prefix
    also the import. Nothing for the default image: the API never resolves it."""
    prefixes = {r.upstream: r.prefix for r in PULL_THROUGH_RULES}
    readable: set[str] = set()
    imported: set[str] = set()
    names: set[str] = set()
    for entry in entries:
        registry, _, path = entry.partition("/")
        name = path if path.endswith("*") else path.rstrip("/")
        if registry == OWN_REGISTRY:
            readable.add(_repository_arn(name))
            names.add(name)
            continue
        names.add(f"{prefixes[registry]}/{name}")
        arn = _repository_arn(f"{prefixes[registry]}/{name}")
        readable.add(arn)
        imported.add(arn)
    _acknowledge_prefixes(
        function,
        names,
        "The operator's allowlist (gpudev:allowedImages) names these prefixes: the API reads "
        "image metadata in them only, and imports only under a pull-through cache prefix.",
    )
    if readable:
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["ecr:BatchGetImage", "ecr:DescribeImages"], resources=sorted(readable)
            )
        )
    if imported:
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["ecr:BatchImportUpstreamImage", "ecr:CreateRepository"],
                resources=sorted(imported),
            )
        )


def grant_node_image_pulls(node_role: iam.Role) -> None:
    """Nodes pull (AmazonEC2ContainerRegistryPullOnly) and, under the cache prefixes, import
    an upstream image on its first pull, creating its cached repository."""
    node_role.add_to_policy(
        iam.PolicyStatement(
            actions=["ecr:BatchImportUpstreamImage", "ecr:CreateRepository"],
            resources=[_repository_arn(f"{rule.prefix}/*") for rule in PULL_THROUGH_RULES],
        )
    )
    _acknowledge_prefixes(
        node_role,
        {f"{rule.prefix}/*" for rule in PULL_THROUGH_RULES},
        "The pull-through cache creates a repository per upstream image on its first pull, "
        "so names are not known in advance; only under the cache rules' prefixes.",
    )
