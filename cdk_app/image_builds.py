"""Images built from a Dockerfile (docs/images.md#built-images): `reserve --dockerfile` and
`gpu-dev image build`. The API hands the CLI a presigned PUT into the context bucket; AWS
CodeBuild (privileged within CodeBuild's own build container, nothing privileged in the
cluster) downloads the context tar, builds `Dockerfile.gpu-dev` from it and pushes
`gpu-dev-builds:<context sha256>` (gpudev/image_builds/builds.py starts and reads the builds).

- The builds' own repository `gpu-dev-builds` (never the team's `gpu-dev-images`, whose
  mirrored images builds would evict): immutable tags, KMS-encrypted, scanned on push;
  a built image expires `BUILT_IMAGE_DAYS` after its push (a reuse after that builds again:
  builds.py checks ECR before it answers `built`), untagged ones after a day.

- The context bucket: S3-managed encryption, SSL only, no public access, contexts expire
  after `CONTEXT_EXPIRY_DAYS` (the image they built stays in ECR).
- The project's role: read the contexts, push to the builds repository only (and
  GetAuthorizationToken, which takes no resource), write its own log group.
- The API and the reservation tasks: StartBuild and BatchGetBuilds on this project, the
  contexts (the API also presigns their PUTs), the build log, the builds repository's
  image details.

CDK context `gpudev:maxBuildContextMegabytes` (default 500) bounds a context; the CLI
refuses one above the default before uploading, the API the deployment's."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Aws, Duration, RemovalPolicy, Stack, Validations
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3

MAX_CONTEXT_CONTEXT = "gpudev:maxBuildContextMegabytes"
DEFAULT_MAX_CONTEXT_MB = 500
PROJECT_NAME = "gpu-dev-image-builds"
CONTEXT_PREFIX = "contexts/"
CONTEXT_EXPIRY_DAYS = 7
BUILD_TIMEOUT = Duration.minutes(60)
QUEUED_TIMEOUT = Duration.minutes(30)  # a build CodeBuild has not begun by then is dropped
BUILDS_REPOSITORY = "gpu-dev-builds"
BUILT_IMAGE_DAYS = 90
DOCKERFILE = "Dockerfile.gpu-dev"  # where the CLI puts the Dockerfile in the tar
_BUILD_LOG_GROUP_ARN = (
    f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:/aws/codebuild/"
    f"{PROJECT_NAME}"
)

BUILDSPEC = {
    "version": "0.2",
    "phases": {
        "pre_build": {
            "commands": [
                "aws ecr get-login-password | docker login --username AWS "
                '--password-stdin "${REPOSITORY_URI%%/*}"',
                'aws s3 cp "s3://$CONTEXT_BUCKET/$CONTEXT_KEY" context.tar',
                # The tag is the context's sha256: a tar that is not what its hash says (an
                # upload other than the one announced) fails here, before any build.
                'echo "$IMAGE_TAG  context.tar" | sha256sum -c -',
                "mkdir context && tar -x -C context -f context.tar",
                # Another build of the same context pushed the tag (immutable) already:
                # this one builds and pushes nothing and succeeds.
                'if aws ecr describe-images --repository-name "${REPOSITORY_URI#*/}" '
                '--image-ids imageTag="$IMAGE_TAG" > /dev/null 2>&1; then '
                'echo "$IMAGE_TAG is pushed already"; touch .pushed; fi',
            ]
        },
        "build": {
            "commands": [
                # The legacy builder's "Step 5/12 : …" lines give the status line its step.
                f"[ -e .pushed ] || DOCKER_BUILDKIT=0 docker build -f context/{DOCKERFILE} "
                '-t "$REPOSITORY_URI:$IMAGE_TAG" context',
            ]
        },
        "post_build": {
            "commands": [
                'if [ "$CODEBUILD_BUILD_SUCCEEDING" = 1 ] && [ ! -e .pushed ]; then '
                'docker push "$REPOSITORY_URI:$IMAGE_TAG"; fi',
            ]
        },
    },
}


def max_context_bytes(scope: Stack) -> int:
    raw = scope.node.try_get_context(MAX_CONTEXT_CONTEXT)
    if raw is None or raw == "":
        return DEFAULT_MAX_CONTEXT_MB * 1_000_000
    try:
        megabytes = int(raw)
    except (TypeError, ValueError):
        megabytes = 0
    if not 1 <= megabytes <= 10_000:
        raise ValueError(f"context {MAX_CONTEXT_CONTEXT}: 1 to 10000 (megabytes); got {raw!r}")
    return megabytes * 1_000_000


def builds_repository(stack: Stack) -> ecr.Repository:
    """Where builds push: their own repository, with their own lifecycle."""
    return ecr.Repository(
        stack,
        "BuiltImages",
        repository_name=BUILDS_REPOSITORY,
        image_scan_on_push=True,
        image_tag_mutability=ecr.TagMutability.IMMUTABLE,
        encryption=ecr.RepositoryEncryption.KMS,  # the AWS-managed ECR key
        lifecycle_rules=[
            ecr.LifecycleRule(
                rule_priority=1,
                description="untagged images go after a day",
                tag_status=ecr.TagStatus.UNTAGGED,
                max_image_age=Duration.days(1),
            ),
            ecr.LifecycleRule(
                rule_priority=2,
                description=f"built images go {BUILT_IMAGE_DAYS} days after their push",
                tag_status=ecr.TagStatus.ANY,
                max_image_age=Duration.days(BUILT_IMAGE_DAYS),
            ),
        ],
        removal_policy=RemovalPolicy.RETAIN,
    )


def build_image_builds(stack: Stack, functions: list[lambda_.Function]) -> codebuild.Project:
    limit = max_context_bytes(stack)
    repository = builds_repository(stack)
    bucket = s3.Bucket(
        stack,
        "BuildContexts",
        encryption=s3.BucketEncryption.S3_MANAGED,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        lifecycle_rules=[
            s3.LifecycleRule(
                id="contexts-expire",
                prefix=CONTEXT_PREFIX,
                expiration=Duration.days(CONTEXT_EXPIRY_DAYS),
                abort_incomplete_multipart_upload_after=Duration.days(1),
            )
        ],
        removal_policy=RemovalPolicy.DESTROY,
    )
    Validations.of(bucket).acknowledge(
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-S1",
            reason="Build contexts live for days and are written only through presigned PUTs "
            "the API hands out and logs (its access log names the caller and the hash); "
            "a second bucket of server access logs would record nothing more.",
        )
    )
    log_group = logs.LogGroup(
        stack,
        "ImageBuildLogs",
        log_group_name=f"/aws/codebuild/{PROJECT_NAME}",
        retention=logs.RetentionDays.ONE_MONTH,
        removal_policy=RemovalPolicy.DESTROY,
    )
    key = kms.Key(
        stack,
        "ImageBuildKey",
        description="gpu-dev image builds: CodeBuild's own artifacts and caches",
        enable_key_rotation=True,
        removal_policy=RemovalPolicy.DESTROY,
    )
    project = codebuild.Project(
        stack,
        "ImageBuilds",
        project_name=PROJECT_NAME,
        description="gpu-dev: builds users' Dockerfiles into gpu-dev-builds",
        build_spec=codebuild.BuildSpec.from_object(BUILDSPEC),
        environment=codebuild.BuildEnvironment(
            build_image=codebuild.LinuxBuildImage.STANDARD_7_0,
            compute_type=codebuild.ComputeType.MEDIUM,
            privileged=True,  # docker build, inside CodeBuild's own build container
        ),
        environment_variables={
            "CONTEXT_BUCKET": codebuild.BuildEnvironmentVariable(value=bucket.bucket_name),
            "REPOSITORY_URI": codebuild.BuildEnvironmentVariable(value=repository.repository_uri),
        },
        encryption_key=key,
        timeout=BUILD_TIMEOUT,
        queued_timeout=QUEUED_TIMEOUT,
        logging=codebuild.LoggingOptions(
            cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=log_group)
        ),
    )
    assert project.role is not None
    project_cfn = project.node.default_child
    assert isinstance(project_cfn, codebuild.CfnProject)
    project_id = stack.get_logical_id(project_cfn)
    bucket.grant_read(project.role, f"{CONTEXT_PREFIX}*")
    repository.grant_pull_push(project.role)
    repository.grant(project.role, "ecr:DescribeImages")  # the buildspec's "pushed already?"
    Validations.of(project).acknowledge(
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-CB3",
            reason="docker build needs CodeBuild's privileged mode; it is privileged within "
            "CodeBuild's own build container only, never in the cluster (issue #33).",
        )
    )
    Validations.of(project.role).acknowledge(
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Action::s3:GetObject*]",
            reason="Reading a context tar: GetObject and its variants on the contexts/ prefix "
            "of the context bucket only.",
        ),
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Action::s3:GetBucket*]",
            reason="CDK's grant_read on the context bucket itself: no other bucket.",
        ),
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Action::s3:List*]",
            reason="CDK's grant_read on the context bucket itself: no other bucket.",
        ),
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::<BuildContexts"
            f"{_logical_suffix(stack, bucket)}.Arn>/{CONTEXT_PREFIX}*]",
            reason="Every context the API presigned: keys are content hashes, not known ahead.",
        ),
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:"
            f"<AWS::Region>:<AWS::AccountId>:log-group:/aws/codebuild/<{project_id}>:*]",
            reason="CodeBuild's own default grant: its log group's streams (one per build).",
        ),
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:codebuild:"
            f"<AWS::Region>:<AWS::AccountId>:report-group/<{project_id}>-*]",
            reason="CodeBuild's own default grant: this project's report groups only.",
        ),
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Action::kms:GenerateDataKey*]",
            reason="CodeBuild encrypts its artifacts with the build key: this key only.",
        ),
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Action::kms:ReEncrypt*]",
            reason="CodeBuild encrypts its artifacts with the build key: this key only.",
        ),
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::*]",
            reason="ecr:GetAuthorizationToken takes no resource (docker login); the "
            "push itself is granted on the builds repository only.",
        ),
    )
    for function in functions:
        _grant_builds(function, project, bucket, log_group, repository, limit)
    return project


def _logical_suffix(stack: Stack, bucket: s3.Bucket) -> str:
    """The hash CDK appends to the bucket's logical id (cdk-nag names the resource by it)."""
    cfn = bucket.node.default_child
    assert isinstance(cfn, s3.CfnBucket)
    return stack.get_logical_id(cfn).removeprefix("BuildContexts")


def _grant_builds(
    function: lambda_.Function,
    project: codebuild.Project,
    bucket: s3.Bucket,
    log_group: logs.LogGroup,
    repository: ecr.Repository,
    limit: int,
) -> None:
    function.add_environment("IMAGE_BUILD_PROJECT", project.project_name)
    function.add_environment("IMAGE_BUILD_CONTEXT_BUCKET", bucket.bucket_name)
    function.add_environment("IMAGE_BUILD_REPOSITORY_URI", repository.repository_uri)
    function.add_environment("IMAGE_BUILD_MAX_CONTEXT_BYTES", str(limit))
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=["codebuild:StartBuild", "codebuild:BatchGetBuilds"],
            resources=[project.project_arn],
        )
    )
    # PutObject: the presigned PUT acts as the API's role; GetObject answers HeadObject;
    # ListBucket makes a missing context a 404 rather than a 403.
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=["s3:PutObject", "s3:GetObject"],
            resources=[bucket.arn_for_objects(f"{CONTEXT_PREFIX}*")],
        )
    )
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{CONTEXT_PREFIX}*"]}},
        )
    )
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=["logs:GetLogEvents"],
            resources=[f"{_BUILD_LOG_GROUP_ARN}:log-stream:*"],
        )
    )
    function.add_to_role_policy(
        iam.PolicyStatement(actions=["ecr:DescribeImages"], resources=[repository.repository_arn])
    )
    Validations.of(function).acknowledge(
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::<BuildContexts"
            f"{_logical_suffix(Stack.of(function), bucket)}.Arn>/{CONTEXT_PREFIX}*]",
            reason="Every context the API presigned: keys are content hashes, not known ahead.",
        ),
        Acknowledgment(
            id="AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:logs:"
            "<AWS::Region>:<AWS::AccountId>:log-group:/aws/codebuild/"
            f"{PROJECT_NAME}:log-stream:*]",
            reason="One stream per build (CodeBuild names it): the build log group only.",
        ),
    )
