"""Row models: one per concept, shared by the API, the workers and the CLI; and the small
value types the repositories take or return."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from gpudev.settings import UserLimitSettings


class ReservationStatus(StrEnum):
    PENDING = "pending"
    QUEUED = "queued"
    PREPARING = "preparing"
    ACTIVE = "active"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    FAILED = "failed"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATUSES


FINAL_STATUSES = frozenset(
    {ReservationStatus.CANCELLED, ReservationStatus.EXPIRED, ReservationStatus.FAILED}
)


class Row(BaseModel):
    model_config = ConfigDict(frozen=True)


class User(Row):
    username: str
    principal_arn: str
    github_username: str | None
    created_at: datetime
    last_seen_at: datetime


class TypeCapacity(Row):
    """A GPU type's capacity as the availability updater computes it (`Availability`) and
    writes it to the type's row (`GpuType`, `gpu_types/update_availability.sql`)."""

    total_cluster_gpus: int
    available_gpus: int
    max_reservable: int
    full_nodes_available: int
    running_instances: int
    desired_capacity: int
    max_per_node: int
    # The most nodes the type's node groups can ever hold: the sum of their Auto Scaling
    # groups' MaxSize (never fewer than they want or run); 0: no nodes, none to come.
    max_nodes: int = 0
    max_nodes_since: datetime | None = None  # when max_nodes was last measured different


class GpuType(TypeCapacity):
    """A `gpu_types` row: the catalogue's configuration, and the capacity the availability
    updater last wrote."""

    gpu_type: str
    instance_type: str
    max_gpus: int
    cpus: int
    memory_gb: int
    is_active: bool
    description: str | None
    last_availability_update: datetime | None
    last_availability_updated_by: str | None
    # EFA interfaces a node of the type has (vpc.amazonaws.com/efa; 0: not EFA-capable):
    # a whole-node pod of a multinode reservation requests them all (cluster/fabric.py)
    efa_interfaces: int = 0

    @property
    def is_cpu_only(self) -> bool:
        return self.max_gpus == 0

    @property
    def has_possible_nodes(self) -> bool | None:
        """Whether the type's node groups can hold a node at all; None before the
        availability updater first measured them (then nothing is refused for it), also
        when it ran only before migration 0031 (max_nodes 0 was not measured then)."""
        if self.last_availability_update is None or self.max_nodes_since is None:
            return None
        return self.max_nodes > 0


class NodeEndpoint(BaseModel):
    """One node of a reservation as users reach it: its rank's own NodePort Service."""

    rank: int
    node_ip: str | None
    node_port: int | None
    node_address_kind: str | None


class ReservationShown(Row):
    """The columns of a reservation its owner sees: the API's `ReservationView` is these
    and what it computes from the others (waits in clock minutes). `Reservation` adds the
    orchestration's (task tokens, execution ARNs, generations), so a column added to the
    row stays out of the view and of the OpenAPI document (tests/unit/test_views.py)."""

    reservation_id: UUID
    user_id: str
    name: str | None
    status: ReservationStatus
    gpu_type: str
    gpu_count: int
    total_nodes: int
    instance_type: str | None
    duration_hours: float
    disk_name: str | None
    jupyter_enabled: bool
    profiling: bool
    # Never over the network in cleartext: Jupyter listens on the pod's loopback. The view
    # leaves it out when node 0's Jupyter check said the pod's image lacks it, and the
    # operators' listing always (the token opens a shell as dev).
    jupyter_url: str | None = Field(
        description="http://localhost:8888/lab?token=...: Jupyter listens on the pod's "
        "loopback only; open it through SSH (`gpu-dev connect --jupyter` forwards a free "
        "local port and prints this URL with that port; or `ssh -L 8888:localhost:8888`). "
        "Its owner's only: null in operators' listings."
    )
    # What the check said (0021): null until the pod said; false with the reason in
    # jupyter_error.
    jupyter_available: bool | None
    jupyter_error: str | None
    github_user: str | None
    secondary_users: list[str]
    pod_name: str | None
    node_ip: str | None
    node_port: int | None
    ssh_command: str | None
    # Made once per reservation, kept across container restarts (0029).
    ssh_host_keys: list[str] = Field(
        description="the public host keys of the pod's sshd (`ssh-ed25519 AAAA...`), made "
        "once per reservation and kept across container restarts: pin them (the CLI writes "
        "them to known_hosts under HostKeyAlias gpu-dev-<id8>); empty for a reservation made "
        "before host keys were kept"
    )
    # 'external', or 'internal': node_ip is reachable only from inside the cluster's VPC
    # (VPN, bastion) (0015).
    node_address_kind: str | None
    # Every node's SSH endpoint, by rank (0033): node 0's is also node_ip/node_port.
    ssh_nodes: list[NodeEndpoint] = Field(
        default_factory=list,
        description="one SSH endpoint per node, by rank (a multinode reservation's node 1 "
        "and on have their own NodePort); empty until it is active",
    )
    # Added GitHub users GitHub listed no public keys for at the lifecycle's last fetch
    # (0033): they cannot log in until they add one.
    keyless_users: list[str] = Field(
        default_factory=list,
        description="added GitHub users for whom GitHub listed no public keys when the "
        "lifecycle last fetched them: they can log in once they add one",
    )
    queue_position: int | None
    current_detailed_status: str | None
    failure_reason: str | None
    extension_error: str | None
    warning_text: str | None
    # Pod health, as the availability updater last saw it (availability/health.py).
    oom_count: int
    last_oom_at: datetime | None
    health_warning: str | None
    # Idle reclaim (0040; docs/utilisation.md): clock minutes without GPU use before the
    # warning (null: never reclaimed), and the warning the updater sent, if any.
    idle_timeout_minutes: int | None = Field(
        default=None,
        description="clock minutes its GPUs may stay idle before it is warned, then ended "
        "after a grace period; null: never reclaimed (`--idle-timeout none`)",
    )
    idle_warning: str | None = None
    # The volume its disk is on, once taken (0030): made for it, or the disk's existing one.
    ebs_volume_id: str | None
    client_request_id: str | None
    # The image asked for (0037), as normalized, and the digest the API resolved it to at
    # submit; null: the deployment's default image.
    image: str | None = Field(
        default=None,
        description="the image asked for (registry/repository:tag), normalized; null: the "
        "deployment's default image",
    )
    image_digest: str | None = Field(
        default=None, description="the digest the pod runs (sha256:...), resolved at submit"
    )
    # Its image's own entrypoint runs, not our startup script: no SSH (0043).
    preserve_entrypoint: bool = Field(
        default=False, description="the image's own entrypoint runs: no SSH, no dev user"
    )
    # Built from a Dockerfile (0045, image_builds/builds.py): the context's hash, which is also the
    # image's tag; the image columns are written when the build succeeds.
    image_build: str | None = Field(
        default=None,
        description="the sha256 of the build context its image is built from (`--dockerfile`); "
        "image and image_digest are null until the build succeeds",
    )
    # A Docker daemon beside the dev server, in the docker namespace (0046).
    docker: bool = Field(default=False, description="a Docker daemon runs beside the dev server")
    cancel_requested_at: datetime | None
    created_at: datetime
    launched_at: datetime | None
    expires_at: datetime | None
    reservation_ended: datetime | None


class Reservation(ReservationShown):
    """A `reservations` row: what its owner sees, and what only the control plane uses."""

    jupyter_port: int | None
    jupyter_token: str | None
    # What the pod runs for an image asked for (0037): <ECR registry>/<repository>@<digest>.
    image_pull: str | None = None
    namespace: str
    warnings_sent: list[int]
    # While queued, the allocator's estimated start (NULL: it never fits); once granted, the
    # grant time (0020; it replaces `estimated_wait_minutes`, which nothing writes any more).
    estimated_start_at: datetime | None = None
    pod_restarts: int
    health_ending: str | None
    idle_active_at: datetime | None = None
    idle_warned_at: datetime | None = None
    idle_ending: str | None = None  # the updater's reason to end it ("idle for 2 h")
    execution_arn: str | None
    task_token: str | None
    change_generation: int
    applied_generation: int
    granted_at: datetime | None
    grant_signalled_at: datetime | None
    ready_deadline: datetime | None
    updated_at: datetime
    cancelled_at: datetime | None
    failed_at: datetime | None


class WatchedReservation(Row):
    """An active reservation as the availability updater watches its pods
    (`pod_health/live.sql`)."""

    reservation_id: UUID
    total_nodes: int
    launched_at: datetime | None
    task_token: str | None
    pod_restarts: int
    oom_count: int
    last_oom_at: datetime | None
    health_warning: str | None
    health_ending: str | None


class PodHealth(Row):
    """What one updater run found for one reservation (`pod_health/record.sql`)."""

    reservation_id: UUID
    new_ooms: int
    last_oom_at: datetime | None
    pod_restarts: int
    health_warning: str | None
    health_ending: str | None


class HealthRecorded(Row):
    reservation_id: UUID
    task_token: str | None
    health_ending: str | None


# What a timeline entry records (migrations 0034, 0036): a status change, hours added, the
# step a starting pod is in, the log tail of a pod that failed to start, an active pod's
# health warning set, changed or cleared; the grant, the pod's scheduling, its image pull,
# its disk (volume, attach, snapshot), its readiness, an OOM kill, restarts, an expiry
# warning sent.
EventKind = Literal[
    "status",
    "extension",
    "startup",
    "pod_log",
    "health",
    "grant",
    "scheduling",
    "image",
    "disk",
    "readiness",
    "oom",
    "restart",
    "warning",
]


@dataclass(frozen=True)
class TimelineEntry:
    """An entry to add to a reservation's timeline that is not a status change. `key`
    makes it once: a second entry with the same key is not written (migration 0036's
    reservation_events_once), so a task run again records nothing twice."""

    kind: EventKind
    detail: str
    key: str


class ReservationEvent(Row):
    event_id: int
    reservation_id: UUID
    at: datetime
    from_status: ReservationStatus | None
    to_status: ReservationStatus
    detail: str | None
    kind: EventKind = "status"
    event_key: str | None = None


class DiskShown(Row):
    """The columns of a disk its owner sees: the API's `DiskView` is these and no more.
    `Disk` adds the internal ones, so a column added to the row stays out of the view and
    of the OpenAPI document until it is added here (tests/unit/test_views.py)."""

    disk_name: str
    size_gb: int | None
    disk_size: str | None
    in_use: bool
    reservation_id: UUID | None
    is_deleted: bool
    delete_date: date | None
    snapshot_count: int
    is_backing_up: bool
    last_snapshot_at: datetime | None
    operation_id: UUID | None
    operation_status: str | None
    operation_error: str | None
    # migrations/0011: why the reservation holding it could not save it yet (a failed
    # snapshot, retried); the disk lifecycle writes it
    lifecycle_error: str | None
    last_used: datetime | None
    created_at: datetime
    # migrations/0011: the volume the reservation holding it mounts (NULL when free)
    held_volume_id: str | None = None


class Disk(DiskShown):
    """A `disks` row: what its owner sees, and what only the control plane uses."""

    disk_id: UUID
    user_id: str
    ebs_volume_id: str | None
    marked_deleted_at: datetime | None
    pending_snapshot_count: int
    latest_snapshot_content_s3: str | None
    last_updated: datetime
    # migrations/0011: the listing of the contents recorded at the last snapshot (the disk
    # lifecycle writes it), and the volume made for the holder
    content_listing: str | None = None
    # migrations/0012: the name EBS tags carry while a rename has not reached them
    tagged_name: str | None = None
    # migrations/0017: when the pod that last mounted it wrote `content_listing`
    content_listed_at: datetime | None = None
    # migrations/0042: the disk it was cloned from (its clone job copies that one's snapshot)
    cloned_from: UUID | None = None


class ReconcilerRun(Row):
    run_id: int
    reconciler: str
    invoked_by: str
    started_at: datetime
    finished_at: datetime | None
    outcome: str | None
    statistics: dict[str, Any]
    error: str | None


# A GPU type's availability (kept by the availability updater) with its live demand.
class TypeAvailability(Row):
    gpu_type: str
    instance_type: str
    max_per_node: int
    total_cluster_gpus: int
    available_gpus: int
    max_reservable: int
    full_nodes_available: int
    running_instances: int
    last_availability_update: datetime | None
    queue_length: int
    queued_gpus: int
    running_reservations: int
    gpus_in_use: int
    # The allocator's ETA (clock minutes) for a new one-slot request at the back of the
    # queue, as of its last pass: 0 when it would start now; None: no ETA (no node).
    estimated_wait_minutes: int | None


@dataclass(frozen=True)
class UserLimits:
    max_live_reservations: int
    max_gpus: int

    @classmethod
    def of(cls, settings: UserLimitSettings) -> UserLimits:
        return cls(settings.max_live_reservations_per_user, settings.max_gpus_per_user)


@dataclass(frozen=True)
class Usage:
    """The caller's live reservations and their GPUs, before this request."""

    live_reservations: int
    live_gpus: int


class Availability(TypeCapacity):
    """What the availability updater computes for one GPU type: its capacity, and whether
    it found the type's scaling groups (not a column)."""

    gpu_type: str
    groups_found: bool
