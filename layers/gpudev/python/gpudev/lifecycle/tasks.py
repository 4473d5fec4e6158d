"""What the tasks of the reservation state machine (statemachines/reservation.asl.json)
share: `Lifecycle`, the connection, the cluster, task tokens, keys, settings and the clock.

Each task reads the reservation row, acts, writes what it did and returns an outcome the
state machine branches on (`payloads.py`). Every task is safe to run twice (Step Functions
retries): objects that exist are left alone, status updates are conditional, tear down is
idempotent. A cancel request is honoured at every step, so a cancel between two task
tokens is never lost. The tasks live by phase: `queueing.py` (start, wait for capacity),
`provision.py` (objects, readiness), `active.py` (checkpoints, parking), `teardown.py`;
`dispatch.py` runs one by name.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg

from gpudev.allocation.service import Allocator, AllocatorReport
from gpudev.cluster import objects
from gpudev.cluster.host_keys import HostKey, carried_host_key
from gpudev.cluster.inventory import list_nodes_and_pods
from gpudev.cluster.objects_client import ReservationObjects
from gpudev.disks.volumes import DiskVolumes
from gpudev.errors import NotFound
from gpudev.lifecycle.keys import GithubKeys
from gpudev.lifecycle.schedule import Schedule
from gpudev.lifecycle.taxonomy import StateChanged
from gpudev.models import Reservation
from gpudev.observability import logger
from gpudev.repositories import GpuTypesRepository, LifecycleRepository, ReservationsRepository
from gpudev.settings import LifecycleSettings, SharedFilesSettings
from gpudev.signals import Signals


@dataclass
class Lifecycle:
    conn: psycopg.Connection[Any]
    api_client: Any  # kubernetes.client.ApiClient
    signals: Signals
    keys: GithubKeys
    settings: LifecycleSettings
    namespace: str
    # Profiling pods carry CAP_SYS_ADMIN, which Pod Security `baseline` (enforced on
    # `namespace`) refuses: they live in a namespace that allows it (deploy/kubernetes).
    profiling_namespace: str
    ec2: Any = None  # the EC2 client: named disks' volumes and snapshots
    efs: Any = None  # the EFS client: users' access points (lifecycle/shared_files.py)
    shared_files: SharedFilesSettings | None = None  # None: no /shared-personal
    clock: Callable[[], float] = field(default=time.time)  # epoch seconds
    sleep: Callable[[float], None] = field(default=time.sleep)  # between checks in a task
    # `--docker` pods have a privileged sidecar, which only this namespace admits.
    docker_namespace: str = "gpu-dev-docker"

    def namespace_of(self, reservation: Reservation) -> str:
        if reservation.docker:
            return self.docker_namespace
        return self.profiling_namespace if reservation.profiling else self.namespace

    @property
    def namespaces(self) -> tuple[str, ...]:
        """Every namespace a reservation's objects can be in (the sweeper looks in each)."""
        return (self.namespace, self.profiling_namespace, self.docker_namespace)

    def objects(self, reservation: Reservation) -> ReservationObjects:
        return ReservationObjects(self.api_client, self.namespace_of(reservation))

    @property
    def rows(self) -> LifecycleRepository:
        return LifecycleRepository(self.conn)

    @property
    def volumes(self) -> DiskVolumes:
        return DiskVolumes(self.ec2)

    @property
    def schedule(self) -> Schedule:
        return Schedule.of(self.settings)

    def reservation(self, reservation_id: UUID) -> Reservation:
        found = ReservationsRepository(self.conn).get(reservation_id)
        if found is None:
            raise NotFound(f"no reservation {reservation_id}")
        return found

    def keys_secret(
        self,
        reservation: Reservation,
        installed: dict[str, str] | None = None,
        host_key: HostKey | None = None,
    ) -> dict[str, Any]:
        """The Secret of the owner's and the added users' GitHub keys (and Jupyter's token,
        and sshd's host key). At provision (`installed` None, `host_key` the one just made)
        GitHub not answering raises GithubUnavailable (a Transient: retried). At a refresh
        `installed` holds the pod's current entries: a user whose fetch fails keeps those, one
        GitHub answered for gets exactly what it answered, none included (keys.py
        `refreshed`); a removed user's entry is gone; the host key is carried over as it is."""
        owner = [reservation.github_user] if reservation.github_user else []

        def fetched(users: list[str], entry: str) -> str:
            if installed is None:
                return self.keys.authorized_keys(users)
            return self.keys.refreshed(users, installed.get(entry))

        return objects.keys_secret(
            reservation,
            fetched(owner, objects.OWNER_KEYS_ENTRY),
            {
                user: fetched([user], objects.added_user_entry(user))
                for user in reservation.secondary_users
            },
            host_key.entries() if host_key is not None else carried_host_key(installed or {}),
        )

    def allocate(self) -> AllocatorReport:
        """One allocator pass (the allocator is the only writer of allocations)."""
        nodes, pods = list_nodes_and_pods(self.api_client)
        cpu_types = {
            t.gpu_type for t in GpuTypesRepository(self.conn).list_active() if t.is_cpu_only
        }
        return Allocator(self.conn, self.signals, self.settings).run(nodes, pods, cpu_types)

    def allocate_for_the_queue(self) -> None:
        """An allocator pass run on behalf of the queue (after a park or a release): it never
        fails this task, since what it does is for other reservations and the scheduled
        allocator runs the same pass every minute."""
        try:
            self.allocate()
        except Exception:
            logger.warning("allocator pass failed; the scheduled pass retries", exc_info=True)


def written(row: Reservation | None, statement: str) -> Reservation:
    """The row a conditional write must have matched: if it did not, the row moved on
    (cancelled, ended) and the task is retried, reading the row afresh."""
    if row is None:
        raise StateChanged(f"lifecycle/{statement} matched nothing: the reservation changed")
    return row
