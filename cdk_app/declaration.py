"""The deployment, declared once: functions, queues, state machines, schedules and the REST
API. The CDK stack (cdk_app/stack.py) and the local cloud (localcloud/deploy.py) both render
this; tests/infrastructure/test_parity.py fails when one of them has something the other
lacks.

Pure data, no aws_cdk import: the local cloud reads it without loading CDK.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METRICS_NAMESPACE = "GpuDev"  # gpudev/observability.py emits under it (a unit test checks)
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")
_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")


@dataclass(frozen=True)
class ContextSetting:
    """A function's environment variable that operators set with CDK context (`cdk.json`,
    or `cdk deploy -c key=value`); `default` applies when the context has no value and
    matches the layer's setting default (a unit test keeps the three in step)."""

    context_key: str
    variable: str
    default: int | str  # a whole number (at least `minimum`), or a word without spaces
    minimum: int = 1


@dataclass(frozen=True)
class DatabaseAccess:
    """How a function logs in to PostgreSQL and the limits its connections carry.

    `role` is its group's NOLOGIN role (migrations/0006_function_roles.sql); the function
    logs in as `<role>_login` with IAM database authentication. No role means the master
    user from the Aurora secret: the migration function only, which owns the schema.
    Timeouts are in milliseconds, 0 for none (docs/architecture.md "The shared layer")."""

    role: str | None
    statement_timeout_ms: int = 10_000
    lock_timeout_ms: int = 3_000

    @property
    def login_user(self) -> str | None:
        return f"{self.role}_login" if self.role else None

    def environment(self) -> dict[str, str]:
        environment = {
            "DB_STATEMENT_TIMEOUT_MS": str(self.statement_timeout_ms),
            "DB_LOCK_TIMEOUT_MS": str(self.lock_timeout_ms),
        }
        if self.login_user:
            environment["DB_IAM_USER"] = self.login_user
        return environment


@dataclass(frozen=True)
class ResourceGrant:
    """One IAM statement: actions on ARN patterns (`{partition}`, `{region}`, `{account}` are
    the stack's), under conditions: (operator, key, values)."""

    actions: tuple[str, ...]
    resources: tuple[str, ...]
    conditions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()


# The tag every volume and snapshot of a named disk carries from its creation
# (gpudev/disks/volumes.py RESERVATION_TAG; tests/infrastructure keeps the two in step).
DISK_RESERVATION_TAG = "reservation-id"
_VOLUMES = "arn:{partition}:ec2:{region}:{account}:volume/*"
_SNAPSHOTS = "arn:{partition}:ec2:{region}::snapshot/*"  # snapshot ARNs carry no account
# The tag that marks our EBS volumes and snapshots (gpudev/disks/ebs.py USER_TAG; a unit
# test keeps the two in step).
EBS_OWNER_TAG = "gpu-dev-user"
_OURS = ("Null", f"aws:ResourceTag/{EBS_OWNER_TAG}", ("false",))
# Made by a reservation: both tags, written at creation (reservation-id alone is a common
# key other tools may use).
_TAGGED = (
    ("StringLike", f"ec2:ResourceTag/{DISK_RESERVATION_TAG}", ("*",)),
    ("StringLike", f"ec2:ResourceTag/{EBS_OWNER_TAG}", ("*",)),
)
_TAGGING = (
    ("StringLike", f"aws:RequestTag/{DISK_RESERVATION_TAG}", ("*",)),
    ("StringLike", f"aws:RequestTag/{EBS_OWNER_TAG}", ("*",)),
)
# The tag the disk jobs put on a deleted disk's snapshots (gpudev/disks/ebs.py
# DELETE_DATE_TAG): the purge deletes only those.
DISK_DELETE_DATE_TAG = "delete-date"
# What the lifecycle (and the sweeper, for executions that died) does to named disks' EBS
# side (gpudev/disks/volumes.py): create a volume only tagged as ours, from a snapshot of
# ours (gpu-dev-user: the disk's earlier snapshots include imported ones, made before the
# reservation tag); snapshot only our volumes, tagged; tag only while creating; delete only
# what a reservation made.
# Describe* has no resource-level scoping (describe_actions).
DISK_VOLUME_GRANTS = (
    ResourceGrant(("ec2:CreateVolume",), (_VOLUMES,), _TAGGING),
    ResourceGrant(("ec2:CreateVolume",), (_SNAPSHOTS,), (_OURS,)),
    ResourceGrant(("ec2:CreateSnapshot",), (_VOLUMES,), _TAGGED),
    ResourceGrant(("ec2:CreateSnapshot",), (_SNAPSHOTS,), _TAGGING),
    ResourceGrant(
        ("ec2:CreateTags",),
        (_VOLUMES, _SNAPSHOTS),
        (("StringEquals", "ec2:CreateAction", ("CreateVolume", "CreateSnapshot")),),
    ),
    ResourceGrant(("ec2:DeleteVolume",), (_VOLUMES,), _TAGGED),
    ResourceGrant(("ec2:DeleteSnapshot",), (_SNAPSHOTS,), _TAGGED),
)
DISK_VOLUME_DESCRIBES = ("ec2:DescribeVolumes", "ec2:DescribeSnapshots")

API_ROLE = "gpudev_api"
LIFECYCLE_ROLE = "gpudev_lifecycle"
RECONCILERS_ROLE = "gpudev_reconcilers"
PURGE_ROLE = "gpudev_purge"  # deletes disk rows, which no other function may (0017)
# The API answers within API Gateway's 29 s: 10 s per statement, 3 s for a lock (the pool
# waits at most DB_POOL_TIMEOUT_SECONDS, 5 s, for a connection).
API_DATABASE = DatabaseAccess(API_ROLE)
# The lifecycle waits for the allocator's pass lock (the allocator, the tasks after every
# release) and runs set-based passes; its functions have 60-120 s.
LIFECYCLE_DATABASE = DatabaseAccess(
    LIFECYCLE_ROLE, statement_timeout_ms=30_000, lock_timeout_ms=20_000
)
RECONCILERS_DATABASE = DatabaseAccess(
    RECONCILERS_ROLE, statement_timeout_ms=60_000, lock_timeout_ms=10_000
)
PURGE_DATABASE = DatabaseAccess(PURGE_ROLE, statement_timeout_ms=60_000, lock_timeout_ms=10_000)
# Migrations take what they need (an index build, a backfill); they run once per deploy.
OWNER_DATABASE = DatabaseAccess(None, statement_timeout_ms=0, lock_timeout_ms=0)


@dataclass(frozen=True)
class FunctionSpec:
    name: str  # logical name: construct id prefix and local registry key
    folder: str  # <source_root>/<folder> is the code asset
    handler: str = "handler.handler"
    memory_mb: int = 512
    timeout_seconds: int = 30
    uses_database: bool = True
    # its PostgreSQL role and limits; required when uses_database (the stack checks)
    database: DatabaseAccess | None = None
    environment: dict[str, str] = field(default_factory=dict)
    source_root: str = "functions"
    # AWS read actions that support no resource-level scoping (Describe*), granted on "*".
    describe_actions: tuple[str, ...] = ()
    grants: tuple[ResourceGrant, ...] = ()  # scoped AWS actions (conditions, ARN patterns)
    uses_cluster: bool = False  # eks:DescribeCluster + a Kubernetes access entry
    kubernetes_group: str = "gpu-dev-readers"  # bound by deploy/kubernetes/rbac.yaml
    reserved_concurrency: int | None = None
    alarm_on_errors: bool = False
    # An EMF metric it emits (namespace METRICS_NAMESPACE) whose Sum > 0 raises an alarm
    repairs_metric: str | None = None
    sends_to: tuple[str, ...] = ()  # QueueSpec names: env <NAME>_QUEUE_URL + send permission
    # QueueSpec names whose dead-letter queue it reads (the operators' `GET /v1/admin/dlq`):
    # env <NAME>_DLQ_URL + sqs:GetQueueAttributes / sqs:ReceiveMessage on that queue only
    reads_dead_letters: tuple[str, ...] = ()
    # StateMachineSpec names: env <NAME>_STATE_MACHINE_ARN + states:StartExecution
    starts: tuple[str, ...] = ()
    # StateMachineSpec names whose task tokens it sends (and whose executions it reads)
    answers_tasks: tuple[str, ...] = ()
    context_environment: tuple[ContextSetting, ...] = ()
    # StateMachineSpec names whose executions it lists and describes (the sweeper): env
    # <NAME>_STATE_MACHINE_ARN + states:ListExecutions / states:DescribeExecution
    watches: tuple[str, ...] = ()

    @property
    def code_dir(self) -> Path:
        return ROOT / self.source_root / self.folder

    @property
    def deployed_name(self) -> str:
        return f"gpudev-{self.folder.replace('_', '-')}"


@dataclass(frozen=True)
class _NamedResource:
    """A queue or a state machine: deployed as gpudev-<name in lower case>."""

    name: str

    @property
    def deployed_name(self) -> str:
        return f"gpudev-{self.name.lower()}"


@dataclass(frozen=True)
class QueueSpec(_NamedResource):
    consumer: (
        str | None
    )  # FunctionSpec invoked with batches (ReportBatchItemFailures); None: not yet
    batch_size: int = 10
    visibility_timeout_seconds: int = 180
    max_receive_count: int = 3  # then the message moves to the dead-letter queue

    @property
    def url_variable(self) -> str:
        """The environment variable that carries this queue's URL to its senders."""
        return f"{self.name.upper()}_QUEUE_URL"

    @property
    def dead_letter_url_variable(self) -> str:
        """The environment variable that carries its dead-letter queue's URL to readers."""
        return f"{self.name.upper()}_DLQ_URL"


@dataclass(frozen=True)
class StateMachineSpec(_NamedResource):
    definition: str  # path from the repository root, e.g. statemachines/reservation.asl.json
    functions: dict[str, str]  # ${Placeholder} -> FunctionSpec name (substituted by its ARN)

    @property
    def arn_variable(self) -> str:
        """The environment variable that carries this state machine's ARN to its starters."""
        return f"{self.name.upper()}_STATE_MACHINE_ARN"

    @property
    def definition_path(self) -> Path:
        return ROOT / self.definition

    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.definition_path.read_text()))

    def render(self, function_arns: dict[str, str]) -> str:
        """The ASL with every placeholder replaced, as CDK's DefinitionSubstitutions do."""
        values = {placeholder: function_arns[fn] for placeholder, fn in self.functions.items()}
        text = self.definition_path.read_text()
        missing = self.placeholders() - set(values)
        if missing:
            raise KeyError(f"{self.definition}: no substitution for {sorted(missing)}")
        return _PLACEHOLDER.sub(lambda m: values[m[1]], text)


@dataclass(frozen=True)
class ScheduleSpec:
    name: str
    expression: str  # rate(...) only: what EventBridge rules and the local ticker share
    target: str  # FunctionSpec name

    @property
    def period_seconds(self) -> int:
        match = _RATE.match(self.expression)
        if not match:
            raise ValueError(f"{self.name}: only rate(...) expressions are supported")
        unit = match[2].rstrip("s")
        return int(match[1]) * {"minute": 60, "hour": 3600, "day": 86400}[unit]


@dataclass(frozen=True)
class ApiSpec:
    """The REST API: one function behind `ANY /{proxy+}` with IAM auth, and public routes.

    A public route's path is a resource of its own carrying only the public methods: API
    Gateway picks the most specific resource first and does not fall back to the proxy for a
    method that resource lacks, so any other method there (signed or not) is answered 403
    `Missing Authentication Token`, as an unknown route is."""

    function: str  # the FunctionSpec serving every route
    public_routes: tuple[tuple[str, str], ...]  # (method, path) without IAM auth

    @property
    def public_paths(self) -> tuple[str, ...]:
        """The resources the public routes create, each once, in declaration order."""
        return tuple(dict.fromkeys(path for _, path in self.public_routes))

    def public_methods(self, path: str) -> tuple[str, ...]:
        return tuple(method for method, public in self.public_routes if public == path)


@dataclass(frozen=True)
class Deployment:
    functions: tuple[FunctionSpec, ...]
    api: ApiSpec
    queues: tuple[QueueSpec, ...] = ()
    state_machines: tuple[StateMachineSpec, ...] = ()
    schedules: tuple[ScheduleSpec, ...] = ()

    def function(self, name: str) -> FunctionSpec:
        return next(spec for spec in self.functions if spec.name == name)

    def without_schedules(self, *names: str) -> Deployment:
        """The same deployment with these schedules left out (tests fire them by hand)."""
        return replace(self, schedules=tuple(s for s in self.schedules if s.name not in names))

    def extended(
        self,
        functions: tuple[FunctionSpec, ...] = (),
        queues: tuple[QueueSpec, ...] = (),
        state_machines: tuple[StateMachineSpec, ...] = (),
        schedules: tuple[ScheduleSpec, ...] = (),
    ) -> Deployment:
        return replace(
            self,
            functions=self.functions + functions,
            queues=self.queues + queues,
            state_machines=self.state_machines + state_machines,
            schedules=self.schedules + schedules,
        )


MIGRATE = FunctionSpec("Migrate", "migrate", timeout_seconds=300, database=OWNER_DATABASE)
RESERVATION_MACHINE = "Reservation"
# Per-user limits (gpudev.settings.UserLimitSettings; docs/architecture.md, "Limits").
USER_LIMITS = (
    ContextSetting("maxLiveReservationsPerUser", "MAX_LIVE_RESERVATIONS_PER_USER", default=4),
    ContextSetting("maxGpusPerUser", "MAX_GPUS_PER_USER", default=32),
)
API = FunctionSpec(
    "Api",
    "api",
    memory_mb=1024,
    timeout_seconds=29,
    sends_to=("Jobs",),
    reads_dead_letters=("Jobs",),
    context_environment=USER_LIMITS,
    database=API_DATABASE,
)
# Disk jobs make the tags of a disk's volumes and snapshots agree with its row
# (gpudev/disks/tagging.py): these keys only.
DISK_TAG_KEYS = ("disk_name", "disk-name", "Name", "delete-date", "marked-deleted-at")
JOBS_CONSUMER = FunctionSpec(
    "JobsConsumer",
    "jobs_consumer",
    timeout_seconds=60,
    describe_actions=("ec2:DescribeVolumes", "ec2:DescribeSnapshots"),
    grants=(
        ResourceGrant(
            ("ec2:CreateTags", "ec2:DeleteTags"),
            (_VOLUMES, _SNAPSHOTS),
            (
                _OURS,
                ("ForAllValues:StringEquals", "aws:TagKeys", DISK_TAG_KEYS),
                # ForAllValues is true of no keys at all: a DeleteTags without Tags deletes
                # every tag. Keys must be sent.
                ("Null", "aws:TagKeys", ("false",)),
            ),
        ),
    ),
    starts=(RESERVATION_MACHINE,),
    answers_tasks=(RESERVATION_MACHINE,),
    alarm_on_errors=True,
    database=LIFECYCLE_DATABASE,
)
JOBS = QueueSpec(
    "Jobs", consumer=JOBS_CONSUMER.name, visibility_timeout_seconds=180, max_receive_count=3
)
# The dev pods' image (gpudev.settings.LifecycleSettings.pod_image): the public PyTorch image
# by default; operators build deploy/dev-image/Dockerfile, push it and set `podImage`.
POD_IMAGE = ContextSetting(
    "podImage", "LIFECYCLE_POD_IMAGE", default="pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"
)
RESERVATION_TASKS = FunctionSpec(
    "ReservationTasks",
    "reservation_tasks",
    memory_mb=1024,
    timeout_seconds=120,
    uses_cluster=True,
    kubernetes_group="gpu-dev-lifecycle",
    answers_tasks=(RESERVATION_MACHINE,),
    context_environment=(POD_IMAGE,),
    describe_actions=DISK_VOLUME_DESCRIBES,
    grants=DISK_VOLUME_GRANTS,  # a named disk's volume and snapshots
    alarm_on_errors=True,
    database=LIFECYCLE_DATABASE,
)
ALLOCATOR = FunctionSpec(
    "Allocator",
    "allocator",
    memory_mb=1024,
    timeout_seconds=120,
    uses_cluster=True,
    answers_tasks=(RESERVATION_MACHINE,),
    alarm_on_errors=True,
    database=LIFECYCLE_DATABASE,
)
RESERVATION = StateMachineSpec(
    RESERVATION_MACHINE,
    "statemachines/reservation.asl.json",
    functions={"ReservationTasksFunctionArn": RESERVATION_TASKS.name},
)

AVAILABILITY_UPDATER = FunctionSpec(
    "AvailabilityUpdater",
    "availability_updater",
    memory_mb=1024,
    timeout_seconds=120,
    describe_actions=("autoscaling:DescribeAutoScalingGroups",),
    uses_cluster=True,
    answers_tasks=(RESERVATION_MACHINE,),  # wakes a reservation whose pod is gone
    alarm_on_errors=True,
    database=RECONCILERS_DATABASE,  # + the pod health columns (migrations/0014)
)
DISK_RECONCILER = FunctionSpec(
    "DiskReconciler",
    "disk_reconciler",
    memory_mb=1024,
    timeout_seconds=300,
    describe_actions=("ec2:DescribeVolumes", "ec2:DescribeSnapshots", "ec2:DescribeInstances"),
    reserved_concurrency=1,  # with the advisory lock: never two runs at once
    alarm_on_errors=True,
    database=RECONCILERS_DATABASE,
)
DISK_PURGE = FunctionSpec(
    "DiskPurge",
    "disk_purge",
    timeout_seconds=300,
    describe_actions=("ec2:DescribeSnapshots",),
    grants=(
        ResourceGrant(
            ("ec2:DeleteSnapshot",),
            (_SNAPSHOTS,),
            (_OURS, ("Null", f"aws:ResourceTag/{DISK_DELETE_DATE_TAG}", ("false",))),
        ),
    ),
    reserved_concurrency=1,  # with the advisory lock: never two runs at once
    alarm_on_errors=True,
    database=PURGE_DATABASE,  # its own role: DELETE on disks (migrations/0017)
)
SWEEPER = FunctionSpec(
    "Sweeper",
    "sweeper",
    memory_mb=1024,
    timeout_seconds=300,
    uses_cluster=True,
    kubernetes_group="gpu-dev-lifecycle",  # deletes leftover objects in gpu-dev
    sends_to=("Jobs",),  # create jobs sent again
    answers_tasks=(RESERVATION_MACHINE,),  # its allocator pass signals grants
    watches=(RESERVATION_MACHINE,),
    # saves the disks of reservations whose execution died, as the lifecycle does
    describe_actions=DISK_VOLUME_DESCRIBES,
    grants=DISK_VOLUME_GRANTS,
    reserved_concurrency=1,  # with the advisory lock: never two runs at once
    alarm_on_errors=True,
    repairs_metric="SweeperRepairs",
    database=LIFECYCLE_DATABASE,  # + its re-send count and runs (migrations/0008)
)
SWEEPER_SCHEDULE = "Sweep"

DEPLOYMENT = Deployment(
    functions=(
        MIGRATE,
        API,
        JOBS_CONSUMER,
        RESERVATION_TASKS,
        ALLOCATOR,
        AVAILABILITY_UPDATER,
        DISK_RECONCILER,
        DISK_PURGE,
        SWEEPER,
    ),
    api=ApiSpec(function=API.name, public_routes=(("GET", "/health"),)),
    queues=(JOBS,),
    state_machines=(RESERVATION,),
    schedules=(
        ScheduleSpec("GpuAvailability", "rate(1 minute)", target=AVAILABILITY_UPDATER.name),
        ScheduleSpec("DiskReconciliation", "rate(5 minutes)", target=DISK_RECONCILER.name),
        ScheduleSpec("Allocation", "rate(1 minute)", target=ALLOCATOR.name),
        ScheduleSpec(SWEEPER_SCHEDULE, "rate(5 minutes)", target=SWEEPER.name),
        ScheduleSpec("DiskPurge", "rate(1 day)", target=DISK_PURGE.name),
    ),
)
