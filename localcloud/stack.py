"""The local cloud as one object: start everything, describe it, stop everything.

Used by `make run` (localcloud/__main__.py) and by the e2e tier, so both exercise the same
wiring: PostgreSQL with migrations, moto with the deployment rendered onto it and our
handlers behind its Lambda, the SQS pollers and schedule ticker, the Kubernetes stand-in
with its simulated cluster, and the SigV4-verifying API gateway.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

import psycopg

from cdk_app.declaration import DEPLOYMENT, Deployment
from gpudev.db.migrations import apply_migrations
from gpudev.settings import LifecycleSettings
from localcloud import (
    event_bus,
    moto_asl,
    moto_ebs,
    moto_efs,
    moto_jsonpath,
    moto_lambda,
    moto_stop,
)
from localcloud import notifications as local_notifications
from localcloud.aws import PROFILES, SSO_ROLE_NAME, SSO_ROLE_PATH, LocalAws, signing_key
from localcloud.cluster_access import (
    PREPULLER_MANIFESTS,
    access_entries,
    apply,
    create_function_roles,
    function_identities,
    manifests,
)
from localcloud.cluster_start import (
    ADMIN_ROLE_ARN,
    admin_token,
    import_kubernetes_client,
    log_refused_token,
    node_shapes,
    point_cluster_at,
)
from localcloud.collector import collect_less
from localcloud.dcgm_exporter import SimulatedDcgmExporter
from localcloud.deploy import DeployedResources, deploy
from localcloud.event_sources import SqsPoller, Ticker
from localcloud.fault_control import CloudFaults, FaultControl
from localcloud.function_environment import (
    lifecycle_environment,
    most_lenient_database_limits,
    set_environment,
)
from localcloud.gateway import LocalApiGateway
from localcloud.image_builds import prepare_image_builds
from localcloud.kubeconfig import kubeconfig, write_kubeconfig
from localcloud.kubernetes.authentication import Authenticator
from localcloud.kubernetes.cluster import SimulatedCluster
from localcloud.kubernetes.container_logs import ContainerLogs
from localcloud.kubernetes.log_shipping import LogShipper
from localcloud.kubernetes.server import KubernetesApiServer
from localcloud.kubernetes.store import ObjectStore
from localcloud.kubernetes.tls import ServerCertificate, issue_server_certificate
from localcloud.lambdas import ACCOUNT_ID, Invoker, LocalLambda
from localcloud.moto_codebuild import CodeBuildSimulation
from localcloud.options import Options
from localcloud.postgres import EmbeddedPostgres, PortInUse, require_free_port
from localcloud.processes import FunctionProcesses, ProcessEnvironments
from localcloud.registry import local_registry, seed_registry
from localcloud.seed import ClusterDescription, seed
from localcloud.shared_files import create_shared_file_system, create_team_access_point
from localcloud.snapshot_completion import SnapshotCompletion
from localcloud.sqs_process import SqsProcess
from localcloud.stop_sequence import POSTGRES_STOP_SECONDS, STOP_BUDGET_SECONDS, StopSequence

# Options is the cloud's constructor argument: importable from here with LocalCloud.
__all__ = ["REGION", "LocalCloud", "Options"]

ROOT = Path(__file__).resolve().parent.parent
REGION = "us-east-2"
DEFAULT_OPTIONS = Options()  # frozen: one shared default


class LocalCloud:
    def __init__(
        self,
        state_dir: Path,
        options: Options = DEFAULT_OPTIONS,
        deployment: Deployment = DEPLOYMENT,
        on_failure: Callable[[str], None] | None = None,
    ):
        self.state_dir = state_dir
        # Told (from any thread) when a part the cloud cannot run without has gone: the SQS
        # process. `python -m localcloud` stops on it; either way it is logged.
        self.on_failure = on_failure
        self.options = options
        self.deployment = deployment
        self._stop = StopSequence()
        self.database_url = ""
        self.aws: LocalAws | None = None
        self.sqs_process: SqsProcess | None = None
        self.gateway: LocalApiGateway | None = None
        # With Options.api_processes or function_processes: the functions' own processes.
        self.function_processes: FunctionProcesses | None = None
        self.api_processes: ProcessEnvironments | None = None
        self.resources = DeployedResources()
        self.pollers: dict[str, SqsPoller] = {}
        self.ticker: Ticker | None = None
        self.bus_delivery: event_bus.AsyncInvoker | None = None
        self.notification_sink: local_notifications.NotificationSink | None = None
        self.lambdas = LocalLambda(deployment.functions, REGION)
        self.functions: Invoker = self.lambdas  # what invokes a function
        self.kubernetes: KubernetesApiServer | None = None
        self.kubernetes_certificate: ServerCertificate | None = None  # its CA and server cert
        self.faults: CloudFaults | None = None
        self.fault_control: FaultControl | None = None
        self.cluster: SimulatedCluster | None = None
        self.dcgm_exporter: SimulatedDcgmExporter | None = None
        self.function_roles: dict[str, str] = {}  # deployed name -> role ARN (cluster users)
        # How long new snapshots stay pending, in real seconds (tests may change it).
        self.snapshots = SnapshotCompletion()
        self.image_builds: CodeBuildSimulation | None = None  # `reserve --dockerfile`
        self.postgres_pid: int | None = None  # when we started PostgreSQL
        self._postgres: EmbeddedPostgres | None = None

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
        chosen = [(what, port) for what, port in vars(ports).items() if port]
        for (what, port), (other, same) in combinations(chosen, 2):
            if port == same:
                raise PortInUse(f"{other} port (--{other}-port) {port} is also the {what} port")
        for what, port in chosen:
            require_free_port(port, f"{what} port (--{what}-port)")
        # SQS's process imports moto while PostgreSQL starts here.
        sqs_process = self.sqs_process = SqsProcess(REGION, port=ports.sqs)
        self._stop.add("sqs", lambda: sqs_process.stop(self._stop.deadline))
        if self.options.database_url:
            self.database_url = self.options.database_url
        else:
            pg = EmbeddedPostgres(self.state_dir / "postgres" / "data", port=ports.postgres or None)
            # A clean start: moto's AWS and the simulated cluster live in memory and start
            # empty, so a database kept from an earlier run would point at volumes,
            # snapshots, executions and pods that no longer exist (docs/architecture.md).
            pg.start(fresh=True)
            self._postgres, self.postgres_pid = pg, pg.pid
            self._stop.add(
                "postgres",
                lambda: pg.stop(
                    timeout=self._stop.deadline.remaining(at_least=POSTGRES_STOP_SECONDS)
                ),
            )
            self.database_url = pg.url
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            apply_migrations(conn, ROOT / "migrations")

        aws = self.aws = LocalAws(REGION, port=ports.aws).start()
        self._stop.add("aws", lambda: aws.stop(self._stop.deadline))
        aws.service_endpoints["sqs"] = sqs_process.wait_until_serving().endpoint_url
        sqs_process.watch(self._sqs_process_exited)
        self.aws.enable_state_machine_execution()
        self.snapshots.delay_seconds = self.options.snapshot_seconds * (
            self.options.seconds_per_hour / 3600
        )
        self._stop.add("snapshot completion", self.snapshots.install())
        self.aws.create_users(self.credentials_file)
        function_key = self.aws.create_function_identity()
        self._function_key_id = function_key[0]

        # The environment our handlers read through gpudev.settings, as CDK would set it;
        # restored on stop so the process (a test session) is left as it was.
        self._set_environment(
            {
                "DATABASE_URL": self.database_url,
                # Every function shares this process (in AWS each has its own): a bigger pool.
                "DB_POOL_MAX_SIZE": "16",
                # ... and one superuser login and one set of limits: the most lenient of the
                # declared function groups (the lifecycle waits on the allocator's lock).
                **most_lenient_database_limits(self.deployment),
                "AWS_REGION": REGION,
                "AWS_ENDPOINT_URL": self.aws.endpoint_url,
                "AWS_ENDPOINT_URL_SQS": self.aws.service_endpoints["sqs"],
                # ... and never ignored (a profile's `ignore_configured_endpoint_urls` would
                # send our functions to AWS itself).
                "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "false",
                # moto's Step Functions interpreter calls Lambda at localhost:$MOTO_PORT.
                "MOTO_PORT": self.aws.endpoint_url.rsplit(":", 1)[1],
                # Our functions' own identity, as a Lambda execution role would provide.
                "AWS_ACCESS_KEY_ID": function_key[0],
                "AWS_SECRET_ACCESS_KEY": function_key[1],
                # The API accepts principals of the deployment's account only (moto's).
                "DEPLOYMENT_ACCOUNT_ID": ACCOUNT_ID,
                # The local operator (`gpu-dev admin ...`): sessions of carol's SSO role.
                "ADMIN_ROLES": ADMIN_ROLE_ARN,
                # Profiling (CAP_SYS_ADMIN): sessions of carol's SSO role too; alice and bob
                # are IAM users, which no role entry matches: their profiling asks are 403.
                "PROFILING_ROLES": f"{SSO_ROLE_PATH.strip('/')}/{SSO_ROLE_NAME}",
                # `reserve --image`: the images seeded in moto's ECR and more (registry.py).
                "ALLOWED_IMAGES": ",".join(self.options.allowed_images),
                # `reserve --docker`: gpudev:allowDocker (cdk_app/docker.py).
                "ALLOW_DOCKER": "true" if self.options.allow_docker else "false",
                "POWERTOOLS_TRACE_DISABLED": "true",
                # EMF metrics are CloudWatch's; locally they would only interleave with output.
                "POWERTOOLS_METRICS_DISABLED": "true",
            }
        )
        # Closed once nothing of ours can use it any more (every step registered below has
        # stopped), before PostgreSQL.
        self._stop.add("connection pool", self._close_pool)

        self.resources = deploy(
            self.deployment,
            self.aws.client,
            retry_scale=self.options.retry_scale,
        )
        sink = self.notification_sink = local_notifications.NotificationSink(
            REGION, hang_seconds=self.options.webhook_hang_seconds
        ).start()
        self._stop.add("notification sink", sink.stop)
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
            | {
                bus.name_variable: self.resources.bus_names[bus.name]
                for bus in self.deployment.event_buses
            }
            | local_notifications.prepare(self.aws.client, sink)
            | _notify_environment(self.options)
            | lifecycle_environment(self.options, self.state_dir)
        )
        self._stop.add(
            "moto lambda seam",
            moto_lambda.install(
                # Whatever invokes our functions when moto does (self.functions is made below).
                lambda name, event: self.functions.invoke(name, event),
                {spec.name: spec.deployed_name for spec in self.deployment.functions},
            ),
        )
        self._stop.add("moto step functions seam", moto_asl.install())
        self._stop.add("moto StopExecution seam", moto_stop.install())
        self._stop.add("moto EFS seams", moto_efs.install())
        self._stop.add("moto DescribeSnapshots seam", moto_ebs.install())
        self._stop.add("moto step functions jsonpath seam", moto_jsonpath.install())
        self._start_cluster()
        self._start_image_builds()

        # The functions' processes get the environment as it is now, complete.
        sts = self.aws.client("sts")
        processes = FunctionProcesses.for_options(
            self.deployment,
            self.options,
            dict(os.environ),
            in_process=self.lambdas,
            identities=lambda: function_identities(self.deployment, self.function_roles, sts),
        )
        if processes is not None:
            self._stop.add("function processes", self._stop.drained(processes.stop))
            self.function_processes = processes
            self.api_processes = processes.of.get(self.deployment.api.function)
            self.functions = processes
        self.gateway = LocalApiGateway(
            self.deployment.api, self.functions, signing_key, REGION, port=ports.api
        ).start()
        self._stop.add("api gateway", self.gateway.stop)
        assert self.kubernetes is not None
        self.faults = CloudFaults(self.database_url, self.kubernetes.faults, self.aws.throttles)
        self.fault_control = FaultControl(self.faults).start()
        self._stop.add("fault control", self.fault_control.stop)
        self._stop.add("outages ended", self.faults.clear)

        # Event sources last: scheduled functions must find the whole environment in place.
        sqs = self.aws.client("sqs")
        for queue in self.deployment.queues:
            if queue.consumer is None:
                continue
            poller = SqsPoller(
                queue, self.resources.queue_urls[queue.name], sqs, self.functions, REGION
            ).start()
            self._stop.add_signal(poller.signal_stop)
            self._stop.add(f"sqs poller {queue.name}", self._stop.drained(poller.stop))
            self.pollers[queue.name] = poller
        self.bus_delivery = event_bus.AsyncInvoker(
            self.deployment.bus_rules,
            {spec.deployed_name: spec.name for spec in self.deployment.functions},
            self.resources.bus_rule_dead_letter_urls,
            self.functions,
            sqs,
            self.options.retry_scale,
        ).start()
        self._stop.add("event bus seam", event_bus.install(self.bus_delivery.deliver))
        self._stop.add_signal(self.bus_delivery.signal_stop)
        self._stop.add("event bus delivery", self._stop.drained(self.bus_delivery.stop))
        self.ticker = Ticker(
            self.deployment.schedules,
            self.resources.rule_arns,
            self.functions,
            REGION,
            self.options.tick_seconds,
        ).start()
        self._stop.add_signal(self.ticker.signal_stop)
        self._stop.add("ticker", self._stop.drained(self.ticker.stop))

        self._stop.add("garbage collector", collect_less())

    def _start_cluster(self) -> None:
        assert self.aws is not None
        import_kubernetes_client()
        description = ClusterDescription.load(self.options.cluster_description)
        shapes = node_shapes(self.database_url)
        seed(description, self.aws.client, {t: s.instance_type for t, s in shapes.items()})
        file_system = create_shared_file_system(self.aws.client, description.availability_zones)
        self._set_environment({"SHARED_FILES_FILE_SYSTEM_ID": file_system})
        team = create_team_access_point(self.aws.client, file_system)
        self._set_environment({"SHARED_FILES_TEAM_ACCESS_POINT_ID": team})
        store, logs = ObjectStore(), ContainerLogs()  # logs: the kubelet's, served as pods/log
        function_principal = signing_key(self._function_key_id)
        assert function_principal is not None
        self.function_roles = create_function_roles(self.deployment, self.aws.client("iam"))
        entries = access_entries(
            self.deployment,
            self.function_roles,
            function_principal.principal_arn,
            [ADMIN_ROLE_ARN],
        )
        authenticator = Authenticator(
            description.cluster_name, signing_key, entries, on_refusal=log_refused_token
        )
        # HTTPS with a CA of this start's own, as EKS serves each cluster's endpoint.
        certificate = self.kubernetes_certificate = issue_server_certificate()
        self.kubernetes = KubernetesApiServer(
            store,
            authenticator,
            port=self.options.ports.kubernetes,
            container_logs=logs,
            tls=certificate.server_context(),
        ).start()
        self._stop.add("kubernetes api", self.kubernetes.stop)
        point_cluster_at(
            description.cluster_name, ACCOUNT_ID, REGION, self.kubernetes.url, certificate.ca_pem
        )
        # The operator's `kubectl apply -f deploy/kubernetes/`, as the admin (carol).
        admin = admin_token(self.credentials_file, description.cluster_name, REGION)
        apply(self.kubernetes.handle, admin, manifests())
        if self.options.prepull:
            apply(self.kubernetes.handle, admin, manifests(names=PREPULLER_MANIFESTS))
        self.cluster = SimulatedCluster(
            store,
            self.aws.client("autoscaling"),
            shapes,
            kubelet_delay_seconds=self.options.kubelet_delay_seconds,
            termination_seconds_scale=self.options.termination_seconds_scale,
            ec2=self.aws.client("ec2"),
            efs=self.aws.client("efs"),
            probe_seconds=self.options.probe_seconds,
            jupyter_images=frozenset(self.options.jupyter_images),
            container_logs=logs,
        )
        self.cluster.kubelet.missing_images = frozenset(self.options.missing_images)
        # Fluent Bit's DaemonSet: what the pods print, into moto's CloudWatch Logs.
        self.cluster.kubelet.log_shipper = LogShipper(self.aws.client("logs"))
        self.cluster.start()
        self._stop.add_signal(self.cluster.signal_stop)
        self._stop.add("simulated cluster", self._stop.drained(self.cluster.stop))
        self._start_registry()
        # Each GPU node's DCGM exporter, which the availability updater scrapes.
        self.dcgm_exporter = SimulatedDcgmExporter(store).start()
        self._stop.add("dcgm exporter", self.dcgm_exporter.stop)
        self._set_environment({"DCGM_EXPORTER_URL": self.dcgm_exporter.url_template()})
        # The endpoint and CA come from DescribeCluster, as on EKS.
        self._set_environment({"EKS_CLUSTER_NAME": description.cluster_name})

    def _start_registry(self) -> None:
        """moto's ECR holds the local registry; the kubelet pulls from it (registry.py)."""
        assert self.aws is not None and self.cluster is not None
        ecr = self.aws.client("ecr")
        seed_registry(ecr)
        pulls = self.cluster.kubelet.image_pulls
        pulls.bytes_per_second = self.options.image_pull_bytes_per_second
        pulls.clock_scale = self.options.seconds_per_hour / 3600
        pod_image = self.options.pod_image or LifecycleSettings().pod_image
        pulls.registry = local_registry(
            ecr, f"{ACCOUNT_ID}.dkr.ecr.{REGION}.amazonaws.com", pod_image
        )

    def _start_image_builds(self) -> None:
        """`reserve --dockerfile`: moto's CodeBuild, builds simulated (moto_codebuild.py)."""
        assert self.aws is not None
        self.image_builds = CodeBuildSimulation(self.aws.client, self.options.image_build_seconds)
        self._stop.add("moto CodeBuild seam", self.image_builds.install())
        self._set_environment(
            prepare_image_builds(
                self.aws.client, ACCOUNT_ID, REGION, max(1, self.options.ready_poll_seconds)
            )
        )

    def _sqs_process_exited(self, code: int) -> None:
        message = (
            f"the SQS process exited unexpectedly (code {code}): no job can be queued or"
            " delivered any more; restart the local cloud"
        )
        logging.getLogger("localcloud").error(message)
        if self.on_failure is not None:
            self.on_failure(message)

    def _set_environment(self, values: dict[str, str]) -> None:
        self._stop.add("environment", set_environment(values))

    def _close_pool(self) -> None:
        """Also the stop's last act: closes a pool an abandoned handler opened meanwhile."""
        from gpudev.db.pool import close_pool

        close_pool(timeout=min(self._stop.deadline.remaining(at_least=0.1), 1.0))

    @property
    def stop_times(self) -> list[tuple[str, float]]:
        """(step, seconds) of the last stop."""
        return self._stop.times

    @property
    def cluster_name(self) -> str:
        return ClusterDescription.load(self.options.cluster_description).cluster_name

    def describe(self) -> dict[str, Any]:
        assert self.aws and self.gateway
        return {
            "api_url": self.gateway.url,
            "database_url": self.database_url,
            "aws_endpoint_url": self.aws.endpoint_url,
            "sqs_endpoint_url": self.aws.service_endpoints["sqs"],
            "kubernetes_url": self.kubernetes.url if self.kubernetes else None,
            "kubeconfig": str(self.kubeconfig_file),
            # python -m localcloud.faults
            "fault_control_url": self.fault_control.url if self.fault_control else None,
            "fault_control_token": self.fault_control.token if self.fault_control else None,
            # python -m localcloud.gpu_activity
            "dcgm_exporter_url": self.dcgm_exporter.url if self.dcgm_exporter else None,
            "eks_cluster_name": self.cluster_name,
            "region": REGION,
            "credentials_file": str(self.credentials_file),
            "profiles": list(PROFILES),
            "queues": self.resources.queue_urls,
            "state_machines": self.resources.state_machine_arns,
            "schedules": {s.name: s.expression for s in self.deployment.schedules},
            # python -m localcloud.outbox
            "notification_sink_url": (
                self.notification_sink.url if self.notification_sink else None
            ),
        }

    @property
    def kubeconfig_file(self) -> Path:
        return self.state_dir / "kubeconfig"

    def write_kubeconfig(self) -> Path:
        """kubectl's configuration for the stand-in (`.local/kubeconfig` under `make run`)."""
        assert self.kubernetes is not None and self.kubernetes_certificate is not None
        config = kubeconfig(
            self.cluster_name,
            self.kubernetes.url,
            self.kubernetes_certificate.ca_pem,
            REGION,
            self.credentials_file,
        )
        return write_kubeconfig(self.kubeconfig_file, config)

    def write_description(self) -> Path:
        path = self.state_dir / "stack.json"
        path.touch(mode=0o600)  # it holds the fault control's token and the database's URL
        path.chmod(0o600)
        path.write_text(json.dumps(self.describe(), indent=2) + "\n")
        return path

    def stop(self, budget_seconds: float = STOP_BUDGET_SECONDS) -> float:
        """Stop everything within `budget_seconds` (give or take PostgreSQL's own second); the
        seconds it took. Handlers still running after the drain are abandoned: their daemon
        threads end at their next check, and nothing new is invoked."""
        return self._stop.run(budget_seconds, first=self._close_lambdas, last=self._close_pool)

    def _close_lambdas(self) -> None:
        self.lambdas.closed = True
        if self.function_processes is not None:
            self.function_processes.close()

    def stop_postgres_now(self) -> None:
        """From any thread, when a stop has run out of time: end the PostgreSQL we started."""
        if self._postgres is not None and self.postgres_pid is not None:
            self._postgres.stop_now(self.postgres_pid)


def _notify_environment(options: Options) -> dict[str, str]:
    timeout = options.notify_webhook_timeout_seconds
    return {} if timeout is None else {"NOTIFY_WEBHOOK_TIMEOUT_SECONDS": str(timeout)}
