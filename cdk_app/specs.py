"""The kinds of resource the deployment declares (cdk_app/declaration.py): a function, its
database access, CDK context settings and IAM grants; a queue, a state machine, a schedule,
the REST API, and the deployment that holds them. Import them from cdk_app.declaration, the
one place the deployment is read from.

Pure data, no aws_cdk import: the local cloud reads it without loading CDK.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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
    the stack's), under conditions: (operator, key, values; `{cluster}` is the EKS cluster's
    name)."""

    actions: tuple[str, ...]
    resources: tuple[str, ...]
    conditions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()


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
    # EventBusSpec names it puts events on (the event relay): env <NAME>_EVENT_BUS_NAME +
    # events:PutEvents on that bus only
    publishes_to: tuple[str, ...] = ()

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
    # The event source's maximum concurrency (Lambda's ScalingConfig, 2-1000): at most this
    # many batches at once, so a backlog drains at a bounded rate and never into the
    # function's throttles (a throttled batch returns to the queue and counts a receive
    # towards the dead-letter queue). None: Lambda's own scaling, unbounded.
    max_concurrency: int | None = None
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
class EventBusSpec:
    """An EventBridge bus of ours. `bus_name` is public: operators' own rules name it."""

    name: str
    bus_name: str

    @property
    def name_variable(self) -> str:
        """The environment variable that carries the bus's name to its publishers."""
        return f"{self.name.upper()}_EVENT_BUS_NAME"


@dataclass(frozen=True)
class BusRuleSpec:
    """A rule on one of our buses: events of `source` with one of `detail_types` invoke the
    function `target` asynchronously. Lambda retries a failed invocation `retry_attempts`
    times (with its own backoff), then puts the event on the dead-letter queue
    gpudev-<name>-dlq; the rule's delivery to Lambda has that queue too."""

    name: str
    bus: str  # EventBusSpec name
    source: str
    detail_types: tuple[str, ...]
    target: str  # FunctionSpec name
    retry_attempts: int = 2  # Lambda's asynchronous retries, 0-2
    max_event_age_seconds: int = 6 * 3600

    @property
    def deployed_name(self) -> str:
        return f"gpudev-{self.name.lower()}"

    @property
    def dead_letter_queue_name(self) -> str:
        return f"{self.deployed_name}-dlq"

    def event_pattern(self) -> dict[str, list[str]]:
        return {"source": [self.source], "detail-type": list(self.detail_types)}


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
    event_buses: tuple[EventBusSpec, ...] = ()
    bus_rules: tuple[BusRuleSpec, ...] = ()

    def function(self, name: str) -> FunctionSpec:
        return next(spec for spec in self.functions if spec.name == name)

    def concurrency_cap(self, name: str) -> int | None:
        """How many environments of the function run at once, at most: its reserved
        concurrency, or the maximum concurrency of the queue it consumes (only its event
        source invokes it), whichever is lower; None: unbounded."""
        caps = [self.function(name).reserved_concurrency]
        caps += [queue.max_concurrency for queue in self.queues if queue.consumer == name]
        bounded = [cap for cap in caps if cap is not None]
        return min(bounded) if bounded else None

    def database_connections(self, pool_max_size: int) -> dict[str, int | None]:
        """Per function that uses the database, the most connections its environments hold
        at once: its concurrency cap times each environment's pool; None: unbounded."""
        return {
            spec.name: None if cap is None else cap * pool_max_size
            for spec in self.functions
            if spec.uses_database
            for cap in [self.concurrency_cap(spec.name)]
        }

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
