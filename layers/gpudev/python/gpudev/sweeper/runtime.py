"""The sweeper's collaborators for this execution environment, built at first use."""

from __future__ import annotations

from typing import Any

import psycopg

from gpudev.aws import aws_clients
from gpudev.cluster.objects_client import ReservationObjects
from gpudev.cluster.volumes import PersistentVolumes
from gpudev.jobs import JobQueue
from gpudev.lifecycle.disk import save_for_the_sweeper
from gpudev.lifecycle.runtime import lifecycle
from gpudev.settings import sweeper_settings
from gpudev.sweeper.plan import Limits
from gpudev.sweeper.service import Sweeper


def sweeper(conn: psycopg.Connection[Any]) -> Sweeper:
    settings = sweeper_settings()
    tasks = lifecycle(conn)
    return Sweeper(
        conn=conn,
        objects=[ReservationObjects(tasks.api_client, namespace) for namespace in tasks.namespaces],
        stepfunctions=aws_clients().stepfunctions,
        jobs=JobQueue(aws_clients().sqs, settings.jobs_queue_url),
        state_machine_arn=settings.reservation_state_machine_arn,
        limits=Limits(
            settings.pending_after_seconds,
            settings.max_create_resends,
            settings.outbox_after_seconds,
            settings.ended_margin_seconds,
            requested_after_seconds=settings.requested_after_seconds,
            change_wake_bound_seconds=tasks.schedule.minutes(tasks.settings.change_wake_minutes),
        ),
        allocate=tasks.allocate,
        save_disk=lambda reservation_id: save_for_the_sweeper(tasks, reservation_id),
        delete_volumes=PersistentVolumes(tasks.api_client).delete_all,
        share_volumes=PersistentVolumes(tasks.api_client).share_reservations,
    )
