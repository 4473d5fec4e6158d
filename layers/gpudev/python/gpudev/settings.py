"""Settings of the control plane, read from the environment.

Every function composes the pieces it needs. Each getter validates once per execution
environment and fails loudly at first use (not at import) when a value is missing, so a
mis-deployed function says exactly which variable it lacks. Nothing else in the project
reads `os.environ`.
"""

from __future__ import annotations

from functools import _lru_cache_wrapper, cache
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from gpudev.identity import AdminRole, RolePattern, parse_admin_roles, parse_role_patterns


class SettingsError(RuntimeError):
    """A required setting is missing or invalid."""


class DatabaseSettings(BaseSettings):
    """Where PostgreSQL is and how a function logs in: a URL (local cloud, tests), Aurora
    with IAM database authentication as a function group's login role (DB_HOST +
    DB_IAM_USER, every function but the migrations), or the Aurora master secret
    (DB_SECRET_ARN, the migration function). Also the limits every pooled connection gets
    (docs/architecture.md "The shared layer")."""

    model_config = SettingsConfigDict(extra="ignore")

    database_url: str | None = None
    db_secret_arn: str | None = None
    db_host: str | None = None
    db_port: int = Field(default=5432, ge=1, le=65535)
    db_iam_user: str | None = None  # e.g. gpudev_api_login: the password is an IAM token
    db_name: str = "gpudev"
    # The RDS CA bundle shipped in the layer (/opt/certs): TLS with sslmode=verify-full.
    db_ssl_root_cert: str = "/opt/certs/rds-global-bundle.pem"
    db_pool_max_size: int = Field(default=2, ge=1, le=20)
    # The function's deployed name on each of its connections (pg_stat_activity shows who
    # holds them: docs/operator-guide.md "Database connections"); unset: libpq's default.
    db_application_name: str | None = Field(default=None, max_length=63)
    db_connect_timeout_seconds: int = Field(default=5, ge=1, le=60)
    # Waiting for a free pooled connection; well below the API function's 29 s timeout
    # (API Gateway's integration limit), so a starved pool answers 503, not a timeout.
    db_pool_timeout_seconds: float = Field(default=5.0, gt=0, le=60)
    # Set on every connection at login (`options=-c ...`, no extra round trip); 0 = none.
    # 10 s / 3 s suit the API; the declaration gives longer-running functions more.
    db_statement_timeout_ms: int = Field(default=10_000, ge=0)
    db_lock_timeout_ms: int = Field(default=3_000, ge=0)
    migrations_dir: Path | None = None

    @model_validator(mode="after")
    def _needs_a_location(self) -> DatabaseSettings:
        if not (self.database_url or self.db_secret_arn or self.db_host):
            raise ValueError("set DATABASE_URL, DB_HOST with DB_IAM_USER, or DB_SECRET_ARN")
        if self.db_host and not (self.database_url or self.db_secret_arn or self.db_iam_user):
            raise ValueError("DB_HOST needs DB_IAM_USER (the login role of IAM auth)")
        return self


class AwsSettings(BaseSettings):
    """The AWS region. (The local cloud's endpoints are botocore's own settings:
    `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_<SERVICE>`.)"""

    model_config = SettingsConfigDict(extra="ignore")

    aws_region: str = Field(validation_alias="AWS_REGION", default="us-east-2")


_S = TypeVar("_S", bound=BaseSettings)


class ClusterSettings(BaseSettings):
    """The EKS cluster user pods run on (its endpoint and CA come from DescribeCluster,
    locally too)."""

    model_config = SettingsConfigDict(extra="ignore")

    eks_cluster_name: str = "pytorch-gpu-dev-cluster"
    kubernetes_namespace: str = "gpu-dev"
    # Profiling reservations (CAP_SYS_ADMIN) run here: Pod Security `baseline`, enforced on
    # the main namespace, refuses that capability (deploy/kubernetes/namespace.yaml).
    kubernetes_profiling_namespace: str = "gpu-dev-profiling"
    # `reserve --docker` reservations (a privileged Docker sidecar) run here: it enforces
    # `privileged`, which neither namespace above allows for it (deploy/kubernetes).
    kubernetes_docker_namespace: str = "gpu-dev-docker"
    # Read timeout of every Kubernetes request (connect: at most 3 s); a timeout is a
    # transient failure the state machine retries.
    kubernetes_timeout_seconds: float = Field(default=10.0, gt=0)


class ApiSettings(BaseSettings):
    """The API function: where jobs go, whose principals may call, and optionally only
    sessions of named IAM roles."""

    model_config = SettingsConfigDict(extra="ignore")

    jobs_queue_url: str
    # The jobs' dead-letter queue, read by operators (GET /v1/admin/dlq); "" when not given.
    jobs_dlq_url: str = ""
    # The account the API is deployed in (CDK: Aws.ACCOUNT_ID; local cloud: moto's).
    deployment_account_id: str = Field(pattern=r"^\d{12}$")
    # With an AWS Organizations id, principals of the organisation's accounts may call too.
    organization_id: str | None = Field(default=None, pattern=r"^o-[a-z0-9]{10,32}$")
    # Comma-separated [path/]RoleName[*] (docs/security.md). A deployment always sets it (the
    # synth refuses none); empty, the local cloud's: IAM users of the account and Identity
    # Center sessions only (identity.require_allowed_role).
    allowed_roles: str = ""
    # Comma-separated IAM role ARNs whose sessions may call the operator routes (/v1/admin);
    # empty: nobody. An operator must be allowed by `allowed_roles` too.
    admin_roles: str = ""
    # Comma-separated [path/]RoleName[*] whose sessions may ask for profiling (CAP_SYS_ADMIN,
    # root on the node; CDK context `gpudev:profilingRoles`); empty: nobody.
    profiling_roles: str = ""
    # Comma-separated image patterns users may reserve with `--image` besides the default
    # image (CDK context `gpudev:allowedImages`; gpudev/images/allowlist.py); empty: the
    # default image only.
    allowed_images: str = ""

    @model_validator(mode="after")
    def _valid_roles(self) -> ApiSettings:
        parse_role_patterns(self.allowed_roles)  # a bad entry fails at first use, named
        parse_admin_roles(self.admin_roles)
        parse_role_patterns(self.profiling_roles)
        return self

    @property
    def allowed_role_patterns(self) -> tuple[RolePattern, ...]:
        return parse_role_patterns(self.allowed_roles)

    @property
    def admin_role_patterns(self) -> tuple[AdminRole, ...]:
        return parse_admin_roles(self.admin_roles)

    @property
    def profiling_role_patterns(self) -> tuple[RolePattern, ...]:
        return parse_role_patterns(self.profiling_roles)


class UserLimitSettings(BaseSettings):
    """Per-user caps on what one user holds or waits for (docs/security.md, "Limits").
    A live reservation is pending, queued, preparing or active and not being cancelled.
    Deployed values come from CDK context (cdk.json); these defaults apply when unset."""

    model_config = SettingsConfigDict(extra="ignore")

    max_live_reservations_per_user: int = Field(default=4, ge=1)
    # GPUs held or queued across live reservations: at least the largest single request
    # (4 whole 8-GPU nodes), so the limit never makes a valid shape impossible by itself.
    max_gpus_per_user: int = Field(default=32, ge=1)


class RateLimitSettings(BaseSettings):
    """Each principal's fair share of the API (docs/security.md, "Limits"): a token
    bucket per canonical principal, refilled at `api_requests_per_minute` up to
    `api_request_burst`. Deployed values come from CDK context (cdk.json)."""

    model_config = SettingsConfigDict(extra="ignore")

    api_requests_per_minute: int = Field(default=120, ge=1)
    api_request_burst: int = Field(default=40, ge=1)


class LifecycleSettings(BaseSettings):
    """The reservation lifecycle's clock and pod image. Every duration derives from
    `seconds_per_hour` (3600 in AWS): the local cloud and tests compress time by lowering it,
    and the state machine reads every wait from task outputs, never from the ASL."""

    model_config = SettingsConfigDict(extra="ignore", env_prefix="LIFECYCLE_")

    seconds_per_hour: float = Field(default=3600.0, gt=0)
    ready_timeout_seconds: float = Field(default=600.0, gt=0)  # then the reservation fails
    ready_poll_seconds: int = Field(default=5, ge=1)
    # `Is the pod ready?` watches the pods this long (a LIST every 0.2 s) before answering
    # `waiting` and the state machine waits `ready_poll_seconds`: 0 checks once per call.
    ready_watch_seconds: float = Field(default=10.0, ge=0)
    queue_timeout_hours: float = Field(default=48.0, gt=0)  # then it is cancelled as stale
    warning_minutes: tuple[int, ...] = (30, 15, 5)
    # an active reservation whose checkpoint failed transiently (after the task's own
    # retries, minutes of them) parks this long, then checks again
    fault_retry_minutes: float = Field(default=2.0, gt=0)
    # At most one change (extend, add-user, Jupyter) wakes an active execution per this many
    # minutes; changes meanwhile are applied together at the next checkpoint, due by then.
    # Bounds an execution's history (25,000 events; docs/security.md, "Limits").
    change_wake_minutes: float = Field(default=3.0, gt=0)
    # Saving a disk (lifecycle/patience.py; real seconds, an infrastructure wait): polls back
    # off up to `save_wait_max_seconds`; after `save_patience_seconds` since the end the
    # sweeper takes the disk over; a pod still there `pod_release_patience_seconds` after the
    # end is deleted with no grace period (its node is gone or hung).
    save_wait_max_seconds: int = Field(default=300, ge=1)
    save_patience_seconds: float = Field(default=4 * 3600.0, gt=0)
    pod_release_patience_seconds: float = Field(default=600.0, gt=0)
    pod_image: str = "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"
    # The image whose static sshd, sudo, bash and busybox an init container copies into
    # every dev pod (cluster/pod_tools.py; CDK context `gpudev:toolsImage`); empty: none,
    # the image brings them (or the startup script installs them with apt-get).
    tools_image: str = ""
    # The Docker daemon beside a `reserve --docker` pod (cluster/pod_docker.py; CDK context
    # `gpudev:dockerImage`): a docker:dind image.
    docker_image: str = "docker:27-dind"
    # JSON {"github-user": ["ssh-ed25519 ..."]}: keys without the network (local cloud, tests)
    github_keys_file: str | None = None
    reservation_state_machine_arn: str = Field(
        default="", validation_alias="RESERVATION_STATE_MACHINE_ARN"
    )


class DiskPurgeSettings(BaseSettings):
    """The daily disk purge (gpudev/disks/purge.py): how many completed snapshots of each
    live disk it keeps (CDK context `diskSnapshotRetention`; disks/retention.py)."""

    model_config = SettingsConfigDict(extra="ignore", env_prefix="DISK_")

    snapshot_retention: int = Field(default=3, ge=1)


class SweeperSettings(BaseSettings):
    """The sweeper (gpudev/sweeper/): when a pending reservation counts as stuck (real
    seconds, not the lifecycle's compressed clock: a lost job is an infrastructure fault),
    how often its create job is sent again before it is ended, and where jobs go."""

    model_config = SettingsConfigDict(extra="ignore", env_prefix="SWEEPER_")

    pending_after_seconds: float = Field(default=300.0, gt=0)
    max_create_resends: int = Field(default=3, ge=0)
    # The relay sends outbox rows older than this (the API sends its own within milliseconds).
    outbox_after_seconds: float = Field(default=10.0, ge=0)
    # Objects of a reservation that ended less than this before a run began are left to its
    # tear down (which may still be finishing) and judged by the next run.
    ended_margin_seconds: float = Field(default=60.0, ge=0)
    # A cancel requested this long ago on a row whose execution still runs was never
    # delivered (its job dead-lettered): the sweeper wakes the execution itself.
    requested_after_seconds: float = Field(default=120.0, ge=0)
    jobs_queue_url: str = Field(validation_alias="JOBS_QUEUE_URL")
    reservation_state_machine_arn: str = Field(validation_alias="RESERVATION_STATE_MACHINE_ARN")


class PodLogSettings(BaseSettings):
    """Where the dev pods' output is read from (gpudev/logs/): the log group Fluent Bit
    writes to (cdk_app/logs.py; the declaration's POD_LOG_GROUP, kept in step by a test)."""

    model_config = SettingsConfigDict(extra="ignore")

    pod_log_group: str = Field(default="/gpu-dev/pods", min_length=1, max_length=512)


class SharedFilesSettings(BaseSettings):
    """The personal network file system (docs/shared-files.md): the deployment's EFS file
    system (the cluster stack's output `SharedFileSystemId`, CDK context
    `gpudev:sharedFileSystemId`); `off`: pods get no /shared-personal. The compiler caches
    on it are capped at `ccache_max_size` (ccache's CCACHE_MAXSIZE syntax)."""

    model_config = SettingsConfigDict(extra="ignore", env_prefix="SHARED_FILES_")

    file_system_id: str = Field(default="off", pattern=r"^(fs-[0-9a-f]{8,40}|off)$")
    ccache_max_size: str = Field(default="20G", pattern=r"^[1-9][0-9]{0,5}[KMGT]i?$")

    # The optional team share at /shared (docs/shared-files.md, "The team share"): `off`,
    # read-only (`ro`) or read-write (`rw`) for everyone (CDK context `gpudev:teamShare`),
    # through the cluster stack's one team access point (`gpudev:teamShareAccessPointId`).
    team_share: Literal["off", "ro", "rw"] = "off"
    team_access_point_id: str = Field(default="off", pattern=r"^(fsap-[0-9a-f]{8,40}|off)$")

    @model_validator(mode="after")
    def _team_share_needs_its_access_point(self) -> SharedFilesSettings:
        if self.team_share != "off" and (
            self.team_access_point_id == "off" or self.file_system_id == "off"
        ):
            raise ValueError(
                "the team share needs the shared file system and its access point "
                "(SHARED_FILES_FILE_SYSTEM_ID and SHARED_FILES_TEAM_ACCESS_POINT_ID)"
            )
        return self

    @property
    def enabled(self) -> bool:
        return self.file_system_id != "off"

    @property
    def team_enabled(self) -> bool:
        return self.team_share != "off"


_POLICY_ENTRY = r"[A-Za-z0-9*_.-]+=(always|when-waiting|never)"
_POLICY = rf"^{_POLICY_ENTRY}(,{_POLICY_ENTRY})*$"


class IdleSettings(BaseSettings):
    """GPU utilisation and idle reclaim (gpudev/utilisation/; docs/utilisation.md). Times
    are clock minutes (compressed with the lifecycle's `seconds_per_hour`). The default and
    maximum timeout, the grace and the per-type policy come from CDK context."""

    model_config = SettingsConfigDict(extra="ignore", env_prefix="IDLE_")

    # `reserve` without --idle-timeout gets this; --idle-timeout may not exceed the maximum.
    timeout_default_minutes: int = Field(default=120, ge=1)
    timeout_max_minutes: int = Field(default=720, ge=1)
    # After the warning, this long (still idle, still eligible) before the reservation ends.
    grace_minutes: int = Field(default=30, ge=1)
    # Never judged idle this soon after activation (the user is still setting up).
    first_minutes: int = Field(default=30, ge=0)
    # A GPU at or above this utilisation (percent) is in use; any GPU in use is activity.
    busy_percent: float = Field(default=5.0, gt=0, le=100)
    # `type=policy,...`: `always`, `when-waiting` (only while others wait for the type) or
    # `never`; `*` for every type not named.
    reclaim_policy: str = Field(default="*=always", pattern=_POLICY)
    # Where the updater scrapes a GPU node's DCGM exporter ({node_ip}, {node_name}).
    dcgm_exporter_url: str = Field(
        default="http://{node_ip}:9400/metrics", validation_alias="DCGM_EXPORTER_URL"
    )
    dcgm_scrape_timeout_seconds: float = Field(default=2.0, gt=0, le=10)

    @model_validator(mode="after")
    def _default_within_max(self) -> IdleSettings:
        if self.timeout_default_minutes > self.timeout_max_minutes:
            raise ValueError("the default idle timeout exceeds the maximum")
        return self


class PrepullerSettings(BaseSettings):
    """The image pre-puller (gpudev/prepuller/; docs/images.md, "Pre-pulled images"): the
    availability updater keeps the DaemonSet deploy/kubernetes/prepuller/ names pulling the
    default image and the `images` most used of the last `days` days. Its no-op runs the
    tools image's static busybox (CDK context `gpudev:toolsImage`): without one, it is off."""

    model_config = SettingsConfigDict(extra="ignore", env_prefix="PREPULLER_")

    days: int = Field(default=14, ge=1, le=90)
    # besides the default image; each stays on every node (docs/images.md: the disk)
    images: int = Field(default=3, ge=0, le=20)
    tools_image: str = ""
    namespace: str = "gpu-dev-prepuller"  # enforces Pod Security `restricted`
    name: str = "gpu-dev-prepuller"


class EventRelaySettings(BaseSettings):
    """The event relay (gpudev/events/relay.py): the bus it puts the lifecycle's events on
    (cdk_app/declaration.py EVENT_BUS)."""

    model_config = SettingsConfigDict(extra="ignore")

    event_bus_name: str = Field(validation_alias="EVENTS_EVENT_BUS_NAME", min_length=1)


class NotificationSettings(BaseSettings):
    """Notifications (gpudev/notifications/): the KMS key the webhook URLs are sealed with,
    the address e-mails come from, where webhooks may point (comma-separated URL prefixes),
    each post's bounds, and how many messages a user gets per hour at most."""

    model_config = SettingsConfigDict(extra="ignore", env_prefix="NOTIFY_")

    key_id: str = Field(min_length=1)
    sender: str = Field(default="", description="the notifier needs it; the API does not")
    webhook_prefixes: str = Field(default="https://hooks.slack.com/services/", min_length=1)
    webhook_timeout_seconds: float = Field(default=5.0, gt=0, le=10)
    webhook_attempts: int = Field(default=3, ge=1, le=5)
    webhook_first_wait_seconds: float = Field(default=0.5, ge=0, le=5)
    rate_per_hour: int = Field(default=30, ge=1)

    @property
    def allowed_webhook_prefixes(self) -> tuple[str, ...]:
        return tuple(p.strip() for p in self.webhook_prefixes.split(",") if p.strip())


class ImageBuildSettings(BaseSettings):
    """Images built from a Dockerfile (docs/images.md#built-images; cdk_app/images.py): the
    CodeBuild project, the bucket contexts are uploaded to, the repository (URI) builds push
    to with the context hash as tag. An empty project: this deployment builds nothing."""

    model_config = SettingsConfigDict(extra="ignore", env_prefix="IMAGE_BUILD_")

    project: str = ""
    context_bucket: str = ""
    repository_uri: str = Field(default="", pattern=r"^([a-z0-9.-]+/[a-z0-9._/-]+)?$")
    # A context tar larger than this is refused (CLI and API; CDK context
    # `gpudev:maxBuildContextMegabytes`).
    max_context_bytes: int = Field(default=500_000_000, ge=1)
    # Between checks of a running build: the reservation's wait loop writes about 9 Step
    # Functions history events a check, so 20 s costs about 2,400 events for a build that
    # waits 90 minutes (the limit is 25,000).
    poll_seconds: int = Field(default=20, ge=1)
    # A claim whose StartBuild never answered is claimable again after this: at least the
    # functions' longest timeout (300 s), so a slow StartBuild is never claimed twice.
    claim_seconds: int = Field(default=300, ge=1)
    # The reservation stops waiting once its build has run this long since its claim:
    # CodeBuild's build timeout plus its queued timeout (cdk_app/image_builds.py) and a margin.
    wait_limit_seconds: int = Field(default=5_700, ge=60)
    # A caller may have this many of their contexts building at once (the API says 429).
    max_building_per_user: int = Field(default=3, ge=1)
    # `gpu-dev image build` builds a failed context again only this long after it failed.
    retry_failed_after_seconds: int = Field(default=600, ge=0)
    upload_url_seconds: int = Field(default=900, ge=60, le=3600)  # a presigned PUT's life

    @property
    def enabled(self) -> bool:
        return bool(self.project and self.context_bucket and self.repository_uri)


class DockerSettings(BaseSettings):
    """Whether users may ask for Docker inside their dev server (`reserve --docker`, a
    privileged sidecar: root on the node; docs/security.md). The operator opts in with CDK
    context `gpudev:allowDocker`; off, the API refuses it with a sentence."""

    model_config = SettingsConfigDict(extra="ignore")

    allow_docker: bool = False


_GETTERS: list[_lru_cache_wrapper[BaseSettings]] = []


def _getter(model: type[_S]) -> _lru_cache_wrapper[_S]:
    """The getter of `model`: read from the environment and validated on the first call,
    the same object after it (until `reset_settings_cache`, or its own `cache_clear`)."""

    @cache
    def get() -> _S:
        return _load(model)

    _GETTERS.append(get)
    return get


def _load(model: type[_S]) -> _S:
    try:
        return model()
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or model.__name__}: {err['msg']}"
            for err in exc.errors()
        )
        raise SettingsError(f"{model.__name__} is invalid: {problems}") from None


database_settings = _getter(DatabaseSettings)
aws_settings = _getter(AwsSettings)
api_settings = _getter(ApiSettings)
cluster_settings = _getter(ClusterSettings)
user_limit_settings = _getter(UserLimitSettings)
rate_limit_settings = _getter(RateLimitSettings)
lifecycle_settings = _getter(LifecycleSettings)
sweeper_settings = _getter(SweeperSettings)
disk_purge_settings = _getter(DiskPurgeSettings)
pod_log_settings = _getter(PodLogSettings)
shared_files_settings = _getter(SharedFilesSettings)
idle_settings = _getter(IdleSettings)
prepuller_settings = _getter(PrepullerSettings)
event_relay_settings = _getter(EventRelaySettings)
notification_settings = _getter(NotificationSettings)
image_build_settings = _getter(ImageBuildSettings)
docker_settings = _getter(DockerSettings)


def reset_settings_cache() -> None:
    """Forget validated settings (tests change the environment between cases)."""
    for getter in _GETTERS:
        getter.cache_clear()
