"""Data access: one repository per table, SQL from `gpudev/sql/`, rows as models.

Repositories take a connection; the caller owns the transaction (a request, a task).
"""

from gpudev.repositories.allocations import AllocationsRepository
from gpudev.repositories.capacity import CapacityRepository
from gpudev.repositories.disk_operations import DiskOperationsRepository
from gpudev.repositories.disk_reconciliation import DiskReconciliationRepository
from gpudev.repositories.disks import DisksRepository, NewDisk
from gpudev.repositories.gpu_types import GpuTypesRepository
from gpudev.repositories.lifecycle import LifecycleRepository
from gpudev.repositories.outbox import OutboxRepository
from gpudev.repositories.pod_health import PodHealthRepository
from gpudev.repositories.reconciler_runs import ReconcilerRunsRepository
from gpudev.repositories.reservations import NewReservation, ReservationsRepository
from gpudev.repositories.sweeper import SweeperRepository
from gpudev.repositories.usage import UsageRepository
from gpudev.repositories.users import UsersRepository

__all__ = [
    "AllocationsRepository",
    "CapacityRepository",
    "DiskOperationsRepository",
    "DiskReconciliationRepository",
    "DisksRepository",
    "GpuTypesRepository",
    "LifecycleRepository",
    "NewDisk",
    "NewReservation",
    "OutboxRepository",
    "PodHealthRepository",
    "ReconcilerRunsRepository",
    "ReservationsRepository",
    "SweeperRepository",
    "UsageRepository",
    "UsersRepository",
]
