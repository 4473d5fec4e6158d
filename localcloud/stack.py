"""The local cloud as one object: start everything, describe it, stop everything.

Used by `make run` (localcloud/__main__.py) and by the e2e tier, so both exercise the same
wiring: PostgreSQL with migrations, moto with the deployment rendered onto it and our
handlers behind its Lambda, the SQS pollers and schedule ticker, the Kubernetes stand-in
with its simulated cluster, and the SigV4-verifying API gateway.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from cdk_app.declaration import DEPLOYMENT, Deployment
from gpudev.aws import aws_clients
from gpudev.cluster.eks import reset_cluster_api_client
from gpudev.db.migrations import apply_migrations
from gpudev.repositories import GpuTypesRepository
from gpudev.settings import reset_settings_cache
from localcloud import moto_lambda
from localcloud.aws import PROFILES, SSO_ROLE_NAME, SSO_ROLE_PATH, LocalAws, signing_key
from localcloud.deadline import Deadline
from localcloud.deploy import DeployedResources, deploy
from localcloud.event_sources import SqsPoller, Ticker
from localcloud.gateway import Invoker, LocalApiGateway
from localcloud.kubernetes.cluster import NodeShape, SimulatedCluster
from localcloud.kubernetes.server import KubernetesApiServer
from localcloud.kubernetes.store import ObjectStore
from localcloud.lambdas import ACCOUNT_ID, LocalLambda
from localcloud.postgres import EmbeddedPostgres, require_free_port
from localcloud.processes import ProcessEnvironments
from localcloud.seed import DEFAULT_DESCRIPTION, ClusterDescription, seed
from localcloud.snapshot_completion import SnapshotCompletion

ROOT = Path(__file__).resolve().parent.parent
REGION = "us-east-2"
log = logging.getLogger("localcloud.stop")

# Ctrl+C: the whole stop ends within this budget. Work in flight (handlers in event sources)
# gets DRAIN_SECONDS of it to finish; what is still running then is abandoned (daemon
# threads), and the servers, the pool and PostgreSQL are stopped with what is left.
STOP_BUDGET_SECONDS = 8.0
DRAIN_SECONDS = 4.0
POSTGRES_STOP_SECONDS = 1.0  # at least, whatever is left of the budget: it is our child


def _most_lenient_database_limits(deployment: Deployment) -> dict[str, str]:
    """Every function shares one pool here, so it gets the longest declared timeouts of
    the function groups (the migrations' "none" aside: they run before the pool exists)."""
    groups = [f.database for f in deployment.functions if f.database and f.database.role]
    if not groups:
        return {}
    return {
        "DB_STATEMENT_TIMEOUT_MS": str(max(g.statement_timeout_ms for g in groups)),
        "DB_LOCK_TIMEOUT_MS": str(max(g.lock_timeout_ms for g in groups)),
    }


@dataclass(frozen=True)
class Ports:
    api: int = 0
    aws: int = 0
    postgres: int = 0
    kubernetes: int = 0


@dataclass(frozen=True)
class Options:
    ports: Ports = Ports()
    database_url: str | None = None  # use this server instead of starting one
    tick_seconds: float | None = 10.0  # every schedule fires this often (None: real periods)
    kubelet_delay_seconds: float = 2.0  # bound pod -> Running
    # Running -> Ready: the pods' readiness probe (sshd answering) passes after this long.
    probe_seconds: float = 2.0
    # A deleted pod stays Terminating for its grace period times this (our pods: 10 s -> 2 s).
    termination_seconds_scale: float = 0.2
    # The reservation lifecycle's clock (LIFECYCLE_* settings): compress time for tests.
    seconds_per_hour: float = 3600.0
    ready_timeout_seconds: float = 600.0
    ready_poll_seconds: int = 2
    ready_watch_seconds: float = 10.0  # `Is the pod ready?` watches this long per call
    # New EBS snapshots stay `pending` this long on the lifecycle's clock (moto: at once).
    snapshot_seconds: float = 0.0
    cluster_description: Path = DEFAULT_DESCRIPTION
    # The dev pods' image (None: the settings' default, the public PyTorch image) and the
    # images whose PATH has jupyter-lab, as the pods' Jupyter check finds it (the public
    # PyTorch image has none; an image built from deploy/dev-image has it).
    pod_image: str | None = None
    jupyter_images: tuple[str, ...] = ()
    # Per-user limits (None: the settings' defaults, as a deployment without CDK context).
    max_live_reservations_per_user: int | None = None
    max_gpus_per_user: int | None = None
    # The API function's execution environments as this many OS processes of their own, as
    # Lambda runs them (localcloud/processes.py); 0: in this process, as every function.
    api_processes: int = 0


def _forget_cached_configuration() -> None:
    """Settings and clients are cached per execution environment; ours just changed."""
    reset_settings_cache()
    aws_clients.cache_clear()
    reset_cluster_api_client()


def _import_kubernetes_client() -> None:
    """Import the Kubernetes client once, here. Our functions import it lazily, and in AWS
    each runs in its own process; here they share one, and the client's lazy submodule
    imports deadlock when two threads take the first import at once."""
    import importlib

    for module in (
        "kubernetes.client",
        "kubernetes.client.api_client",
        "kubernetes.client.configuration",
        "kubernetes.client.exceptions",
        "kubernetes.client.api.core_v1_api",
    ):
        importlib.import_module(module)


# The collector's thresholds while a cloud runs: young collections every 10,000 net
# allocations instead of 700, and a full pass considered after 50 middle ones instead of 10.
CLOUD_GC_THRESHOLDS = (10_000, 20, 50)


def _collect_less() -> Callable[[], None]:
    """Make the collector's pauses rare in this process; what undoes it, for the stop.

    Every thread of the process stops while the collector runs, the gateway's too. What the
    start made (moto's and botocore's models, the stand-in, the handlers' modules) lives as
    long as the cloud, yet each full pass walked it: passes of up to a second under
    bench/api_load.py. It is frozen out of them; and since moto, the Step Functions
    interpreter and the handlers allocate heavily, Python's default thresholds promoted their
    short-lived objects into the old generation and ran a full pass every second or two (12
    in 15 s with one client, up to 0.27 s each): with CLOUD_GC_THRESHOLDS, none in 15 s."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*CLOUD_GC_THRESHOLDS)

    def restore() -> None:
        gc.set_threshold(*thresholds)
        gc.unfreeze()

    return restore


def _principal_of_key(access_key_id: str) -> str | None:
    key = signing_key(access_key_id)
    return key.principal_arn if key else None


# GitHub users' public keys as the lifecycle's key seam sees them locally (no network).
LOCAL_GITHUB_KEYS = {
    user: [f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{user.upper():A<43} {user}@local"]
    for user in ("alice", "bob", "octocat")
}


class LocalCloud:
    def __init__(
        self, state_dir: Path, options: Options = Options(), deployment: Deployment = DEPLOYMENT
    ):
        self.state_dir = state_dir
        self.options = options
        self.deployment = deployment
        self._stack = ExitStack()
        self.database_url = ""
        self.aws: LocalAws | None = None
        self.gateway: LocalApiGateway | None = None
        self.api_processes: ProcessEnvironments | None = None  # with Options.api_processes
        self.resources = DeployedResources()
        self.pollers: dict[str, SqsPoller] = {}
        self.ticker: Ticker | None = None
        self.lambdas = LocalLambda(deployment.functions, REGION)
        self.kubernetes: KubernetesApiServer | None = None
        self.cluster: SimulatedCluster | None = None
        # How long new snapshots stay pending, in real seconds (tests may change it).
        self.snapshots = SnapshotCompletion()
        self.postgres_pid: int | None = None  # when we started PostgreSQL
        self._postgres: EmbeddedPostgres | None = None
        # Set when stop() begins; each step of the stop takes what is left of it.
        self._deadline = Deadline.after(STOP_BUDGET_SECONDS)
        self._drain_deadline = self._deadline
        self._signal_stop: list[Callable[[], None]] = []  # ask workers to stop, without waiting
        self.stop_times: list[tuple[str, float]] = []  # (step, seconds) of the last stop

    @property
    def credentials_file(self) -> Path:
        return self.state_dir / "aws" / "credentials"

    def start(self) -> LocalCloud:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        ports = self.options.ports
        for what, port in vars(ports).items():
            if port:
                require_free_port(port, f"{what} port (--{what}-port)")
        if self.options.database_url:
            self.database_url = self.options.database_url
        else:
            pg = EmbeddedPostgres(self.state_dir / "postgres" / "data", port=ports.postgres or None)
            pg.start()
            self._postgres, self.postgres_pid = pg, pg.pid
            self._on_stop(
                "postgres",
                lambda: pg.stop(timeout=self._deadline.remaining(at_least=POSTGRES_STOP_SECONDS)),
            )
            self.database_url = pg.url
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            apply_migrations(conn, ROOT / "migrations")

        aws = self.aws = LocalAws(REGION, port=ports.aws).start()
        self._on_stop("aws", lambda: aws.stop(self._deadline))
        self.aws.enable_state_machine_execution()
        self.snapshots.delay_seconds = self.options.snapshot_seconds * (
            self.options.seconds_per_hour / 3600
        )
        self._on_stop("snapshot completion", self.snapshots.install())
        self.aws.create_users(self.credentials_file)
        function_key = self.aws.create_function_identity()

        # The environment our handlers read through gpudev.settings, as CDK would set it;
        # restored on stop so the process (a test session) is left as it was.
        self._set_environment(
            {
                "DATABASE_URL": self.database_url,
                # Every function shares this process (in AWS each has its own): a bigger pool.
                "DB_POOL_MAX_SIZE": "16",
                # ... and one superuser login and one set of limits: the most lenient of the
                # declared function groups (the lifecycle waits on the allocator's lock).
                **_most_lenient_database_limits(self.deployment),
                "AWS_REGION": REGION,
                "AWS_ENDPOINT_URL": self.aws.endpoint_url,
                # moto's Step Functions interpreter calls Lambda at localhost:$MOTO_PORT.
                "MOTO_PORT": self.aws.endpoint_url.rsplit(":", 1)[1],
                # Our functions' own identity, as a Lambda execution role would provide.
                "AWS_ACCESS_KEY_ID": function_key[0],
                "AWS_SECRET_ACCESS_KEY": function_key[1],
                # The API accepts principals of the deployment's account only (moto's).
                "DEPLOYMENT_ACCOUNT_ID": ACCOUNT_ID,
                # The local operator (`gpu-dev admin ...`): sessions of carol's SSO role.
                "ADMIN_ROLES": f"arn:aws:iam::{ACCOUNT_ID}:role{SSO_ROLE_PATH}{SSO_ROLE_NAME}",
                "POWERTOOLS_TRACE_DISABLED": "true",
                # EMF metrics are CloudWatch's; locally they would only interleave with output.
                "POWERTOOLS_METRICS_DISABLED": "true",
            }
        )
        # Closed once nothing of ours can use it any more (every step registered below has
        # stopped), before PostgreSQL.
        self._on_stop("connection pool", self._close_pool)

        self.resources = deploy(
            self.deployment, self.aws.client, retry_scale=self.options.seconds_per_hour / 3600
        )
        self._set_environment(
            {q.url_variable: self.resources.queue_urls[q.name] for q in self.deployment.queues}
            | {
                q.dead_letter_url_variable: self.resources.dead_letter_queue_urls[q.name]
                for q in self.deployment.queues
            }
            | {
                m.arn_variable: self.resources.state_machine_arns[m.name]
                for m in self.deployment.state_machines
            }
            | self._lifecycle_environment()
        )
        self._on_stop(
            "moto lambda seam",
            moto_lambda.install(
                self.lambdas,
                {spec.name: spec.deployed_name for spec in self.deployment.functions},
            ),
        )
        self._start_cluster()

        api_function: Invoker = self.lambdas
        if self.options.api_processes:
            self.api_processes = ProcessEnvironments(
                self.deployment.function(self.deployment.api.function),
                dict(os.environ),  # the environment every function has here, complete now
                self.options.api_processes,
            )
            api_function = self.api_processes
            self._on_stop("api processes", self._drained(self.api_processes.stop))
        self.gateway = LocalApiGateway(
            self.deployment.api, api_function, signing_key, REGION, port=ports.api
        ).start()
        self._on_stop("api gateway", self.gateway.stop)

        # Event sources last: scheduled functions must find the whole environment in place.
        sqs = self.aws.client("sqs")
        for queue in self.deployment.queues:
            if queue.consumer is None:
                continue
            poller = SqsPoller(
                queue, self.resources.queue_urls[queue.name], sqs, self.lambdas, REGION
            ).start()
            self._signal_stop.append(poller.signal_stop)
            self._on_stop(f"sqs poller {queue.name}", self._drained(poller.stop))
            self.pollers[queue.name] = poller
        self.ticker = Ticker(
            self.deployment.schedules,
            self.resources.rule_arns,
            self.lambdas,
            REGION,
            self.options.tick_seconds,
        ).start()
        self._signal_stop.append(self.ticker.signal_stop)
        self._on_stop("ticker", self._drained(self.ticker.stop))

        self._on_stop("garbage collector", _collect_less())

    def _lifecycle_environment(self) -> dict[str, str]:
        keys_file = self.state_dir / "github_keys.json"
        keys_file.parent.mkdir(parents=True, exist_ok=True)
        keys_file.write_text(json.dumps(LOCAL_GITHUB_KEYS, indent=2))
        return (
            {
                "LIFECYCLE_SECONDS_PER_HOUR": str(self.options.seconds_per_hour),
                "LIFECYCLE_READY_TIMEOUT_SECONDS": str(self.options.ready_timeout_seconds),
                "LIFECYCLE_READY_POLL_SECONDS": str(self.options.ready_poll_seconds),
                "LIFECYCLE_READY_WATCH_SECONDS": str(self.options.ready_watch_seconds),
                "LIFECYCLE_GITHUB_KEYS_FILE": str(keys_file),
            }
            | self._user_limit_environment()
            | self._pod_image_environment()
        )

    def _pod_image_environment(self) -> dict[str, str]:
        image = self.options.pod_image
        return {} if image is None else {"LIFECYCLE_POD_IMAGE": image}

    def _user_limit_environment(self) -> dict[str, str]:
        limits = {
            "MAX_LIVE_RESERVATIONS_PER_USER": self.options.max_live_reservations_per_user,
            "MAX_GPUS_PER_USER": self.options.max_gpus_per_user,
        }
        return {name: str(value) for name, value in limits.items() if value is not None}

    def _start_cluster(self) -> None:
        assert self.aws is not None
        _import_kubernetes_client()
        description = ClusterDescription.load(self.options.cluster_description)
        with psycopg.connect(self.database_url) as conn:
            catalogue = GpuTypesRepository(conn).list_active()
        # GPU node groups in public subnets (users SSH to the node's external address), the
        # CPU ones in private subnets (internal address only): the CLI shows both paths.
        shapes = {
            t.gpu_type: NodeShape(
                t.gpu_type,
                t.instance_type,
                t.max_gpus,
                t.cpus,
                t.memory_gb,
                public_subnet=not t.is_cpu_only,
            )
            for t in catalogue
        }
        seed(description, self.aws.client, {t: s.instance_type for t, s in shapes.items()})
        store = ObjectStore()
        self.kubernetes = KubernetesApiServer(
            store, description.cluster_name, _principal_of_key, port=self.options.ports.kubernetes
        ).start()
        self._on_stop("kubernetes api", self.kubernetes.stop)
        self.cluster = SimulatedCluster(
            store,
            self.aws.client("autoscaling"),
            shapes,
            kubelet_delay_seconds=self.options.kubelet_delay_seconds,
            termination_seconds_scale=self.options.termination_seconds_scale,
            ec2=self.aws.client("ec2"),
            probe_seconds=self.options.probe_seconds,
            jupyter_images=frozenset(self.options.jupyter_images),
        ).start()
        self._signal_stop.append(self.cluster.signal_stop)
        self._on_stop("simulated cluster", self._drained(self.cluster.stop))
        self._set_environment(
            {
                "EKS_CLUSTER_NAME": description.cluster_name,
                "KUBERNETES_ENDPOINT_URL": self.kubernetes.url,
            }
        )

    def _set_environment(self, values: dict[str, str]) -> None:
        saved = {name: os.environ.get(name) for name in values}

        def restore() -> None:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            _forget_cached_configuration()

        os.environ.update(values)
        _forget_cached_configuration()
        self._on_stop("environment", restore)

    def _on_stop(self, step: str, stop: Callable[[], object]) -> None:
        """Register a step of the stop (run last-registered first), timed."""

        def timed() -> None:
            began = time.monotonic()
            try:
                stop()
            finally:
                self.stop_times.append((step, time.monotonic() - began))

        self._stack.callback(timed)

    def _drained(self, stop: Callable[[Deadline], None]) -> Callable[[], None]:
        """A worker's stop, given the drain deadline of the stop in progress."""
        return lambda: stop(self._drain_deadline)

    def _close_pool(self) -> None:
        from gpudev.db.pool import close_pool

        close_pool(timeout=min(self._deadline.remaining(at_least=0.1), 1.0))

    @property
    def cluster_name(self) -> str:
        return ClusterDescription.load(self.options.cluster_description).cluster_name

    def describe(self) -> dict[str, Any]:
        assert self.aws and self.gateway
        return {
            "api_url": self.gateway.url,
            "database_url": self.database_url,
            "aws_endpoint_url": self.aws.endpoint_url,
            "kubernetes_url": self.kubernetes.url if self.kubernetes else None,
            "eks_cluster_name": self.cluster_name,
            "region": REGION,
            "credentials_file": str(self.credentials_file),
            "profiles": list(PROFILES),
            "queues": self.resources.queue_urls,
            "state_machines": self.resources.state_machine_arns,
            "schedules": {s.name: s.expression for s in self.deployment.schedules},
        }

    def write_description(self) -> Path:
        path = self.state_dir / "stack.json"
        path.write_text(json.dumps(self.describe(), indent=2) + "\n")
        return path

    def stop(self, budget_seconds: float = STOP_BUDGET_SECONDS) -> float:
        """Stop everything within `budget_seconds` (give or take PostgreSQL's own second); the
        seconds it took. Handlers still running after the drain are abandoned: their daemon
        threads end at their next check, and nothing new is invoked."""
        began = time.monotonic()
        self._deadline = Deadline(began + budget_seconds)
        self._drain_deadline = Deadline(min(self._deadline.at, began + DRAIN_SECONDS))
        self.stop_times = []
        self.lambdas.closed = True
        for signal_stop in self._signal_stop:  # all at once: their work winds down together
            signal_stop()
        try:
            self._stack.close()
        finally:
            self._close_pool()  # one an abandoned handler opened meanwhile
            took = time.monotonic() - began
            steps = ", ".join(f"{step} {seconds:.2f}" for step, seconds in self.stop_times)
            log.info("stopped in %.2f s (%s)", took, steps)
        return took

    def stop_postgres_now(self) -> None:
        """From any thread, when a stop has run out of time: end the PostgreSQL we started."""
        if self._postgres is not None and self.postgres_pid is not None:
            self._postgres.stop_now(self.postgres_pid)
