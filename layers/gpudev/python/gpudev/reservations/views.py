"""What users see of a reservation: everything they need, nothing of the orchestration
(task tokens and execution ARNs stay internal)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel

from gpudev.models import Reservation, ReservationStatus


class ReservationView(BaseModel):
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
    jupyter_url: str | None
    github_user: str | None
    secondary_users: list[str]
    pod_name: str | None
    node_ip: str | None
    node_port: int | None
    ssh_command: str | None
    queue_position: int | None
    estimated_wait_minutes: int | None
    current_detailed_status: str | None
    failure_reason: str | None
    extension_error: str | None
    warning_text: str | None
    client_request_id: str | None
    cancel_requested_at: datetime | None
    created_at: datetime
    launched_at: datetime | None
    expires_at: datetime | None
    reservation_ended: datetime | None

    @classmethod
    def of(cls, reservation: Reservation) -> ReservationView:
        return cls.model_validate(reservation.model_dump(include=set(cls.model_fields)))
