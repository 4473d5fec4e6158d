"""The gpu-dev stack: network, Aurora PostgreSQL, the shared layer, and everything the
deployment declaration (cdk_app/declaration.py) lists: functions, the REST API, queues,
state machines and schedules. The local cloud renders the same declaration onto moto.

Each part is built by its module (network, database, alarms, functions, api, queues,
state_machines, dashboard) with the stack itself as the scope, so every logical id is the
stack's own: moving a part between modules never renames (and so never replaces) a resource."""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from constructs import Construct

from cdk_app.access import ApiAccess
from cdk_app.alarms import Alarms
from cdk_app.api import build_rest_api
from cdk_app.dashboard import build_dashboard
from cdk_app.database import build_database
from cdk_app.declaration import (
    ALLOCATOR,
    API,
    AVAILABILITY_UPDATER,
    DEPLOYMENT,
    DISK_PURGE,
    DISK_RECONCILER,
    RESERVATION_TASKS,
    SWEEPER,
    Deployment,
)
from cdk_app.docker import configure_docker
from cdk_app.functions import (
    FunctionBuilder,
    StackParts,
    build_shared_layer,
    migrate_on_deploy,
)
from cdk_app.images import build_images, tools_image
from cdk_app.logs import build_pod_logs
from cdk_app.network import build_network, eks_cluster_name
from cdk_app.notifications import build_event_buses, build_notification_secrets
from cdk_app.queues import build_queue
from cdk_app.state_machines import build_state_machine, grant_state_machines
from cdk_app.team_share import check_team_share


class GpuDevStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        deployment: Deployment = DEPLOYMENT,
        **kwargs: object,
    ):
        super().__init__(scope, construct_id, **kwargs)  # type: ignore[arg-type]
        # The EKS cluster the dev pods run on is managed outside this stack.
        self.cluster_name = eks_cluster_name(self)
        self.access = ApiAccess.from_context(self)
        self.team_share = check_team_share(self)  # off, ro or rw; refused at synth if unmountable
        self.network = build_network(self)
        self.database = build_database(self, self.network)
        self.alarms = Alarms(self)
        self.layer = build_shared_layer(self)
        self.pod_logs = build_pod_logs(self, self.cluster_name)
        builder = FunctionBuilder(
            self,
            layer=self.layer,
            network=self.network,
            database=self.database,
            alarms=self.alarms,
            cluster_name=self.cluster_name,
        )
        self.functions = {spec.name: builder.build(spec) for spec in deployment.functions}
        migrate_on_deploy(self, self.functions, self.database)
        self.team_images = build_images(
            self, self.functions[API.name], self.functions[RESERVATION_TASKS.name]
        )
        configure_docker(self, self.functions[API.name], self.functions[RESERVATION_TASKS.name])
        # The image pre-puller's no-op comes from the tools image (gpudev/prepuller/plan.py).
        self.functions[AVAILABILITY_UPDATER.name].add_environment(
            "PREPULLER_TOOLS_IMAGE", tools_image(self)
        )
        parts = StackParts(self, self.functions, self.alarms)
        self.rest_api = build_rest_api(parts, deployment, self.access)
        self.dead_letter_queues = [
            build_queue(parts, queue, deployment) for queue in deployment.queues
        ]
        self.state_machines = [
            build_state_machine(parts, spec) for spec in deployment.state_machines
        ]
        grant_state_machines(parts, deployment)
        self.event_buses = build_event_buses(parts, deployment)
        self.notifications_key = build_notification_secrets(parts)
        for schedule in deployment.schedules:
            events.Rule(
                self,
                f"{schedule.name}Schedule",
                schedule=events.Schedule.expression(schedule.expression),
                targets=[targets.LambdaFunction(self.functions[schedule.target])],
            )
        build_dashboard(
            self,
            rest_api=self.rest_api,
            functions={
                spec.deployed_name: self.functions[spec.name] for spec in deployment.functions
            },
            state_machines=self.state_machines,
            dead_letter_queues=self.dead_letter_queues,
            allocator=ALLOCATOR.deployed_name,
            availability_updater=AVAILABILITY_UPDATER.deployed_name,
            reconcilers=[spec.deployed_name for spec in (DISK_RECONCILER, DISK_PURGE, SWEEPER)],
        )
