"""The deployment, declared once: functions, queues, state machines, schedules and the REST
API. The CDK stack (cdk_app/stack.py) and the local cloud (localcloud/deploy.py) both render
this; tests/infrastructure/test_parity.py fails when one of them has something the other
lacks. The kinds of resource it declares are defined in cdk_app/specs.py and imported from
here.

Pure data, no aws_cdk import: the local cloud reads it without loading CDK.
"""

from __future__ import annotations

# Re-exported (`as`): this module is where the deployment and its kinds are imported from.
from cdk_app.specs import ApiSpec as ApiSpec
from cdk_app.specs import BusRuleSpec as BusRuleSpec
from cdk_app.specs import ContextSetting as ContextSetting
from cdk_app.specs import DatabaseAccess as DatabaseAccess
from cdk_app.specs import Deployment as Deployment
from cdk_app.specs import EventBusSpec as EventBusSpec
from cdk_app.specs import FunctionSpec as FunctionSpec
from cdk_app.specs import QueueSpec as QueueSpec
from cdk_app.specs import ResourceGrant as ResourceGrant
from cdk_app.specs import ScheduleSpec as ScheduleSpec
from cdk_app.specs import StateMachineSpec as StateMachineSpec

METRICS_NAMESPACE = "GpuDev"  # gpudev/observability.py emits under it (a unit test checks)


# The tag every volume and snapshot of a named disk carries from its creation
# (gpudev/disks/volumes.py RESERVATION_TAG; tests/infrastructure keeps the two in step).
DISK_RESERVATION_TAG = "reservation-id"
_VOLUMES = "arn:{partition}:ec2:{region}:{account}:volume/*"
_SNAPSHOTS = "arn:{partition}:ec2:{region}::snapshot/*"  # snapshot ARNs carry no account
_INSTANCES = "arn:{partition}:ec2:{region}:{account}:instance/*"
# The tags a reservation puts on a disk's existing volume it takes (gpudev/disks/ebs.py
# RESERVATION_TAG and ADOPTED_TAG; tests/infrastructure keeps them in step).
DISK_ADOPTION_TAG_KEYS = (DISK_RESERVATION_TAG, "gpu-dev-adopted-by")
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
    # A disk's existing volume (imported: no reservation tag) is adopted by the reservation
    # that takes it (gpudev/disks/volumes.py `adopt`): these two keys only, on ours only.
    ResourceGrant(
        ("ec2:CreateTags",),
        (_VOLUMES,),
        (_OURS, ("ForAllValues:StringEquals", "aws:TagKeys", DISK_ADOPTION_TAG_KEYS)),
    ),
    ResourceGrant(("ec2:DeleteVolume",), (_VOLUMES,), _TAGGED),
    ResourceGrant(("ec2:DeleteSnapshot",), (_SNAPSHOTS,), _TAGGED),
    # A volume still attached to a hung node past the pod patience is forced off it before
    # its snapshot (lifecycle/disk.py `save_disk`): DetachVolume authorizes the volume (ours,
    # by tag) and the instance (a node of our cluster: EKS tags every node it launches with
    # its cluster's name).
    ResourceGrant(("ec2:DetachVolume",), (_VOLUMES,), _TAGGED),
    ResourceGrant(
        ("ec2:DetachVolume",),
        (_INSTANCES,),
        (("StringEquals", "ec2:ResourceTag/eks:cluster-name", ("{cluster}",)),),
    ),
)
DISK_VOLUME_DESCRIBES = ("ec2:DescribeVolumes", "ec2:DescribeSnapshots")

# The Elastic IP each EFA node gets on its primary interface (gpudev/cluster/addresses.py
# INSTANCE_TAG; a test keeps the two in step): allocated only with the tag, tagged only while
# allocating, associated and released only when it carries the tag. AssociateAddress also
# authorizes the node's interface, which EC2 creates with the instance and tags with nothing
# of ours. No DisassociateAddress: an address is never taken off a node (EC2 frees it when
# the instance ends).
NODE_ADDRESS_TAG = "gpu-dev:instance"
_ELASTIC_IPS = "arn:{partition}:ec2:{region}:{account}:elastic-ip/*"
_NODE_ADDRESS = ("Null", f"aws:ResourceTag/{NODE_ADDRESS_TAG}", ("false",))
NODE_ADDRESS_GRANTS = (
    ResourceGrant(
        ("ec2:AllocateAddress",),
        (_ELASTIC_IPS,),
        (
            ("Null", f"aws:RequestTag/{NODE_ADDRESS_TAG}", ("false",)),
            ("ForAllValues:StringEquals", "aws:TagKeys", (NODE_ADDRESS_TAG,)),
        ),
    ),
    ResourceGrant(
        ("ec2:CreateTags",),
        (_ELASTIC_IPS,),
        (("StringEquals", "ec2:CreateAction", ("AllocateAddress",)),),
    ),
    ResourceGrant(
        ("ec2:AssociateAddress", "ec2:ReleaseAddress"), (_ELASTIC_IPS,), (_NODE_ADDRESS,)
    ),
    ResourceGrant(
        ("ec2:AssociateAddress",),
        ("arn:{partition}:ec2:{region}:{account}:network-interface/*",),
    ),
)

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


# The database's connections, bounded (docs/operator-guide.md "Database connections"): each
# function's environments run at most its concurrency cap at once (reserved concurrency, or
# its queue's maximum concurrency), each holding at most DB_POOL_MAX_SIZE connections
# (gpudev.settings.DatabaseSettings' default; a unit test keeps the two in step). Their sum
# stays within DATABASE_CONNECTION_BUDGET: under the 189 max_connections Aurora PostgreSQL
# Serverless v2 has at a maximum of 1 ACU, so it holds whatever the capacity range, and
# about a tenth of the ~1,669 it has at our maximum of 8 ACUs (the rest: operators, psql,
# the RDS agent). tests/unit/test_connection_budget.py sums them.
DB_POOL_MAX_SIZE = 2
DATABASE_CONNECTION_BUDGET = 150
# API requests in flight at once: ~20 ms each at the database, so about 1,000 a second.
API_CONCURRENCY = 20
# Lifecycle tasks at once (Step Functions retries a throttled task with backoff: the
# reservation machine's Retry on Lambda.TooManyRequestsException).
TASK_CONCURRENCY = 20
# Jobs consumed at once (batches of 10): a backlog after an outage drains at this many.
JOBS_CONCURRENCY = 5

MIGRATE = FunctionSpec(
    "Migrate",
    "migrate",
    timeout_seconds=300,
    reserved_concurrency=1,  # the deploy trigger runs it once
    database=OWNER_DATABASE,
)
RESERVATION_MACHINE = "Reservation"
# Per-user limits (gpudev.settings.UserLimitSettings; docs/security.md, "Limits").
USER_LIMITS = (
    ContextSetting("maxLiveReservationsPerUser", "MAX_LIVE_RESERVATIONS_PER_USER", default=4),
    ContextSetting("maxGpusPerUser", "MAX_GPUS_PER_USER", default=32),
)
# Each principal's share of the API (gpudev.settings.RateLimitSettings; "Limits").
REQUEST_RATE = (
    ContextSetting("apiRequestsPerMinute", "API_REQUESTS_PER_MINUTE", default=120),
    ContextSetting("apiRequestBurst", "API_REQUEST_BURST", default=40),
)
# The dev pods' image (gpudev.settings.LifecycleSettings.pod_image): the public PyTorch image
# by default; operators build deploy/dev-image/Dockerfile, push it and set `podImage`. The API
# reads it too: `reserve --image` naming it is always allowed (gpudev/images/).
POD_IMAGE = ContextSetting(
    "podImage", "LIFECYCLE_POD_IMAGE", default="pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"
)
# The dev pods' output: Fluent Bit writes it (deploy/kubernetes/fluent-bit.yaml, which names
# the same group; a unit test keeps them in step), cdk_app/logs.py makes the group, the API
# reads it (gpudev/logs/; gpudev.settings.PodLogSettings' default is this name).
POD_LOG_GROUP = "/gpu-dev/pods"
_POD_LOGS = "arn:{partition}:logs:{region}:{account}:log-group:" + POD_LOG_GROUP + ":*"
# Idle reclaim (gpudev.settings.IdleSettings; docs/utilisation.md): the API checks
# --idle-timeout against the default and maximum, the availability updater decides.
IDLE_RECLAIM = (
    ContextSetting("idleTimeoutDefaultMinutes", "IDLE_TIMEOUT_DEFAULT_MINUTES", default=120),
    ContextSetting("idleTimeoutMaxMinutes", "IDLE_TIMEOUT_MAX_MINUTES", default=720),
    ContextSetting("idleGraceMinutes", "IDLE_GRACE_MINUTES", default=30),
    ContextSetting("idleReclaimPolicy", "IDLE_RECLAIM_POLICY", default="*=always"),
)
# The personal network file system (docs/shared-files.md): the cluster stack's EFS file
# system (its output SharedFileSystemId), `off` without one; the compiler caches' cap.
SHARED_FILE_SYSTEM_ID = ContextSetting(
    "gpudev:sharedFileSystemId", "SHARED_FILES_FILE_SYSTEM_ID", default="off"
)
CCACHE_MAX_SIZE = ContextSetting(
    "gpudev:ccacheMaxSize", "SHARED_FILES_CCACHE_MAX_SIZE", default="20G"
)
# The optional team share at /shared (docs/shared-files.md, "The team share"): `off`, `ro`
# or `rw` for every pod of every reservation, through the team access point the cluster
# stack makes when it is on (its output TeamShareAccessPointId); cdk_app/team_share.py
# checks the pair at synth.
TEAM_SHARE = ContextSetting("gpudev:teamShare", "SHARED_FILES_TEAM_SHARE", default="off")
TEAM_SHARE_ACCESS_POINT = ContextSetting(
    "gpudev:teamShareAccessPointId", "SHARED_FILES_TEAM_ACCESS_POINT_ID", default="off"
)
SHARE_CONTEXT = (SHARED_FILE_SYSTEM_ID, TEAM_SHARE, TEAM_SHARE_ACCESS_POINT)
# The deployment's file system only (gpudev:sharedFileSystemId, named at synth; without it
# the lifecycle gets no EFS grant at all): never another file system of the account.
_FILE_SYSTEM = (
    "arn:{partition}:elasticfilesystem:{region}:{account}:file-system/{shared_file_system}"
)
# `gpu-dev disk list`: the file system's metered size (EFS meters no access point alone).
SHARE_USAGE_GRANT = ResourceGrant(("elasticfilesystem:DescribeFileSystems",), (_FILE_SYSTEM,))
# The image pre-puller (gpudev.settings.PrepullerSettings; docs/images.md): the most used
# images of how many last days, and how many of them, besides the default image.
PREPULLER = (
    ContextSetting("gpudev:prepullDays", "PREPULLER_DAYS", default=14),
    ContextSetting("gpudev:prepullImages", "PREPULLER_IMAGES", default=3, minimum=0),
)
API = FunctionSpec(
    "Api",
    "api",
    memory_mb=1024,
    timeout_seconds=29,
    sends_to=("Jobs",),
    reads_dead_letters=("Jobs",),
    environment={"POD_LOG_GROUP": POD_LOG_GROUP},
    # `gpu-dev logs`: the dev pods' group only (its streams are `...:log-stream:<name>`).
    grants=(
        ResourceGrant(
            ("logs:DescribeLogStreams", "logs:FilterLogEvents"),
            (_POD_LOGS,),
        ),
        # a contact's e-mail address becomes an SES identity (SES mails it a link to verify)
        ResourceGrant(
            ("ses:CreateEmailIdentity", "ses:GetEmailIdentity"),
            ("arn:{partition}:ses:{region}:{account}:identity/*",),
        ),
        SHARE_USAGE_GRANT,
    ),
    context_environment=USER_LIMITS + REQUEST_RATE + IDLE_RECLAIM + (POD_IMAGE, *SHARE_CONTEXT),
    reserved_concurrency=API_CONCURRENCY,  # beyond it API Gateway answers 429 or 5xx
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
        # A clone copies its source's latest snapshot (gpudev/disks/clone.py): CopySnapshot
        # authorizes the source (ours: gpu-dev-user) and the copy (tagged as a disk's at
        # creation); tags only while copying.
        ResourceGrant(("ec2:CopySnapshot",), (_SNAPSHOTS,), (_OURS,)),
        ResourceGrant(("ec2:CopySnapshot",), (_SNAPSHOTS,), _TAGGING),
        ResourceGrant(
            ("ec2:CreateTags",),
            (_SNAPSHOTS,),
            (("StringEquals", "ec2:CreateAction", ("CopySnapshot",)),),
        ),
    ),
    starts=(RESERVATION_MACHINE,),
    answers_tasks=(RESERVATION_MACHINE,),
    alarm_on_errors=True,
    # no reserved concurrency: the queue's maximum concurrency bounds it without throttles
    # (a throttled batch would count a receive towards the dead-letter queue)
    database=LIFECYCLE_DATABASE,
)
# A job failing transiently comes back after the lifecycle's fault-retry wait (2 min): 16
# receives ride out 30 minutes of outage (docs/lifecycle.md, "Outages"); a permanent failure
# comes back at once, so it reaches the dead-letter queue in seconds.
JOBS = QueueSpec(
    "Jobs",
    consumer=JOBS_CONSUMER.name,
    max_concurrency=JOBS_CONCURRENCY,
    visibility_timeout_seconds=180,
    max_receive_count=16,
)
# The tag every user's access point carries (gpudev/shared_files/access_points.py USER_TAG;
# a unit test keeps the two in step). The lifecycle makes access points only tagged so, on
# the deployment's file systems; nothing else on EFS.
ACCESS_POINT_USER_TAG = "gpu-dev-user"
_ACCESS_POINTS = "arn:{partition}:elasticfilesystem:{region}:{account}:access-point/*"
SHARED_FILES_GRANTS = (
    ResourceGrant(
        ("elasticfilesystem:CreateAccessPoint",),
        (_FILE_SYSTEM,),
        (("StringLike", f"aws:RequestTag/{ACCESS_POINT_USER_TAG}", ("*",)),),
    ),
    # Tags on create only (CreateAccessPoint with Tags authorizes TagResource too).
    ResourceGrant(
        ("elasticfilesystem:TagResource",),
        (_ACCESS_POINTS,),
        (
            ("StringEquals", "elasticfilesystem:CreateAction", ("CreateAccessPoint",)),
            ("StringLike", f"aws:RequestTag/{ACCESS_POINT_USER_TAG}", ("*",)),
        ),
    ),
)
# The file system, as both the cluster stack and the local cloud make it.
SHARED_FILES_CREATION_TOKEN = "gpu-dev-shared-personal"
SHARED_FILES_IA_AFTER = "AFTER_30_DAYS"
SHARED_FILES_ROOT = "/users"  # every user's access point is rooted below it
TEAM_SHARE_ROOT = "/team"  # the team access point's root (cdk_app/team_share.py)
TEAM_SHARE_PERMISSIONS = "0755"  # every request is made as dev: the mode only shows it
RESERVATION_TASKS = FunctionSpec(
    "ReservationTasks",
    "reservation_tasks",
    memory_mb=1024,
    timeout_seconds=120,
    uses_cluster=True,
    kubernetes_group="gpu-dev-lifecycle",
    answers_tasks=(RESERVATION_MACHINE,),
    context_environment=(POD_IMAGE, *SHARE_CONTEXT, CCACHE_MAX_SIZE),
    # a recorded access point is checked before reuse (shared_files/service.py)
    describe_actions=(*DISK_VOLUME_DESCRIBES, "elasticfilesystem:DescribeAccessPoints"),
    # a named disk's volume and snapshots; users' access points
    grants=DISK_VOLUME_GRANTS + SHARED_FILES_GRANTS,
    reserved_concurrency=TASK_CONCURRENCY,
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
    # passes take the advisory lock in turn: a second waits, a third would only wait longer
    reserved_concurrency=2,
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
    describe_actions=(
        "autoscaling:DescribeAutoScalingGroups",
        "ec2:DescribeAddresses",
        "ec2:DescribeInstances",
    ),
    grants=NODE_ADDRESS_GRANTS,  # the EFA nodes' Elastic IPs
    uses_cluster=True,
    # gpu-dev-readers' rights, and get/patch of the image pre-puller's DaemonSet only
    # (deploy/kubernetes/rbac.yaml, deploy/kubernetes/prepuller/rbac.yaml)
    kubernetes_group="gpu-dev-availability",
    answers_tasks=(RESERVATION_MACHINE,),  # wakes a reservation whose pod is gone, or idle
    # scrapes the DCGM exporters (utilisation/); keeps the pre-puller's images (prepuller/)
    context_environment=IDLE_RECLAIM + PREPULLER + (POD_IMAGE,),
    reserved_concurrency=2,  # every minute, up to 120 s: two may overlap
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
# How many completed snapshots of each live disk the daily purge keeps (disks/retention.py).
SNAPSHOT_RETENTION = ContextSetting("diskSnapshotRetention", "DISK_SNAPSHOT_RETENTION", default=3)
DISK_PURGE = FunctionSpec(
    "DiskPurge",
    "disk_purge",
    timeout_seconds=300,
    # Volumes: the snapshots they were made from are never retired (disks/retention.py).
    describe_actions=("ec2:DescribeSnapshots", "ec2:DescribeVolumes"),
    grants=(
        ResourceGrant(
            ("ec2:DeleteSnapshot",),
            (_SNAPSHOTS,),
            (_OURS, ("Null", f"aws:ResourceTag/{DISK_DELETE_DATE_TAG}", ("false",))),
        ),
        # Retention: a live disk's older snapshots (ours, without delete-date).
        ResourceGrant(
            ("ec2:DeleteSnapshot",),
            (_SNAPSHOTS,),
            (_OURS, ("Null", f"aws:ResourceTag/{DISK_DELETE_DATE_TAG}", ("true",))),
        ),
    ),
    context_environment=(SNAPSHOT_RETENTION,),
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
    # its allocator pass signals grants; it wakes executions whose cancel or change job
    # never arrived (sweeper/plan.py `unheard_request`)
    answers_tasks=(RESERVATION_MACHINE,),
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

# The public event bus (docs/notifications.md): the lifecycle's events, written to
# bus_events with their row change (migrations/0039), put on it by the event relay.
EVENT_BUS = EventBusSpec("Events", "gpu-dev")
EVENT_SOURCE = "gpu-dev"  # gpudev/events/catalogue.py SOURCE (a unit test keeps them in step)
EVENT_DETAIL_TYPES = (  # gpudev/events/catalogue.py DETAIL_TYPES
    "Reservation Queued",
    "Reservation Active",
    "Reservation Warning",
    "Reservation Ended",
    "Reservation Health",
    "Reservation Idle",
)
EVENT_RELAY = FunctionSpec(
    "EventRelay",
    "event_relay",
    timeout_seconds=60,
    publishes_to=(EVENT_BUS.name,),
    reserved_concurrency=1,  # SKIP LOCKED makes two safe; one is enough
    alarm_on_errors=True,
    database=LIFECYCLE_DATABASE,  # + SELECT and the publish marks on bus_events (0039)
)
EVENT_RELAY_SCHEDULE = "EventRelay"

# Notifications (docs/notifications.md). The address e-mails come from: CDK makes it an SES
# identity (SES mails its owner a link to verify it); until SES is out of its sandbox, every
# recipient must be verified too, which the API asks of every address anyway.
NOTIFICATION_SENDER = ContextSetting(
    "notificationSender", "NOTIFY_SENDER", default="gpu-dev-notifications@example.com"
)
EMAIL_IDENTITIES = _EMAIL_IDENTITIES = "arn:{partition}:ses:{region}:{account}:identity/*"
NOTIFIER = FunctionSpec(
    "Notifier",
    "notifier",
    # the webhook's 3 attempts of at most 5 s and their waits (channels.SlackWebhook), SES
    timeout_seconds=60,
    # + ses:SendEmail from the sender only (cdk_app/notifications.py: the sender is context)
    grants=(ResourceGrant(("ses:GetEmailIdentity",), (_EMAIL_IDENTITIES,)),),
    context_environment=(NOTIFICATION_SENDER,),
    reserved_concurrency=5,  # a burst of events waits in Lambda's async queue, not the database
    alarm_on_errors=True,
    database=LIFECYCLE_DATABASE,  # + contacts and deliveries (migrations/0039)
)
# Who uses the notifications KMS key, and for what (cdk_app/notifications.py): the API seals
# webhook URLs, the notifier opens them; env NOTIFY_KEY_ID.
NOTIFICATIONS_KEY_USES = {API.name: ("kms:Encrypt",), NOTIFIER.name: ("kms:Decrypt",)}
NOTIFY_RULE = BusRuleSpec(
    "Notify",
    bus=EVENT_BUS.name,
    source=EVENT_SOURCE,
    detail_types=EVENT_DETAIL_TYPES,
    target=NOTIFIER.name,
)

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
        EVENT_RELAY,
        NOTIFIER,
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
        ScheduleSpec(EVENT_RELAY_SCHEDULE, "rate(1 minute)", target=EVENT_RELAY.name),
    ),
    event_buses=(EVENT_BUS,),
    bus_rules=(NOTIFY_RULE,),
)
