"""Data access: one repository per table, SQL from `gpudev/sql/`, rows as models.

Repositories take a connection; the caller owns the transaction (a request, a task).
"""

from gpudev.repositories.disks import DisksRepository, NewDisk
from gpudev.repositories.gpu_types import GpuTypesRepository
from gpudev.repositories.outbox import OutboxRepository
from gpudev.repositories.reconciler_runs import ReconcilerRunsRepository
from gpudev.repositories.reservations import NewReservation, ReservationsRepository
from gpudev.repositories.sweeper import SweeperRepository
from gpudev.repositories.users import UsersRepository

__all__ = [
    "DisksRepository",
    "GpuTypesRepository",
    "NewDisk",
    "NewReservation",
    "OutboxRepository",
    "ReconcilerRunsRepository",
    "ReservationsRepository",
    "SweeperRepository",
    "UsersRepository",
]
