"""What the API takes and gives for reservations: the requests the services accept and the
view users see (everything they need, nothing of the orchestration: task tokens and
execution ARNs stay internal)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, Field

from gpudev.models import (
    EventKind,
    Reservation,
    ReservationEvent,
    ReservationShown,
    ReservationStatus,
)
from gpudev.reservations.rules import (
    DISK_NAME,
    GITHUB_USERNAME_SHAPE,
    GPU_TYPES,
    HOURS_ALLOWED,
    MAX_EXTENSION_HOURS,
    MAX_HOURS,
    MIN_EXTENSION_HOURS,
    MIN_HOURS,
)
from gpudev.settings import lifecycle_settings
from gpudev.utilisation.timeout import IDLE_TIMEOUT_PATTERN


# Patterns, enums and bounds that rules.py checks with sentences of its own (after the
# request is parsed) are stated in the schema only (`json_schema_extra`): the OpenAPI
# document says them, and the answer to a value outside them stays the rule's.
class ReservationRequest(BaseModel):
    gpu_type: str = Field(
        min_length=1,
        max_length=50,
        json_schema_extra={"enum": list(GPU_TYPES)},
        description="a type of the catalogue (any case)",
    )
    gpu_count: int = Field(ge=0, le=64)
    hours: float = Field(ge=MIN_HOURS, le=MAX_HOURS, allow_inf_nan=False, description=HOURS_ALLOWED)
    name: str | None = Field(default=None, max_length=63)
    disk_name: str | None = Field(
        default=None,
        description="a named disk, or null for none",
        json_schema_extra={"pattern": DISK_NAME.pattern},
    )
    jupyter: bool = False
    idle_timeout: str | None = Field(
        default=None,
        max_length=20,
        json_schema_extra={"pattern": IDLE_TIMEOUT_PATTERN},
        description="how long its GPUs may stay idle before it is warned, then ended after a "
        "grace period: 2h, 90m, or none (never); null: the deployment's default",
    )
    profiling: bool = Field(
        default=False,
        description=(
            "give the pod CAP_SYS_ADMIN (and the dev user sudo) for profilers that need it: "
            "hardware performance counters, Nsight Systems/Compute, perf"
        ),
    )
    github_user: str | None = Field(
        default=None,
        max_length=39,
        json_schema_extra={"pattern": GITHUB_USERNAME_SHAPE},
        description="whose GitHub keys open the pod; the caller's setting if null",
    )
    client_request_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="repeat it to retry safely: the first reservation is returned",
    )
    # Parsed by gpudev/images/reference.py (400 when malformed), checked against the
    # operator's allowlist and resolved to a digest in ECR (422 when refused).
    image: str | None = Field(
        default=None,
        max_length=512,
        description="an image reference ([registry/]repository[:tag][@sha256:...]): the "
        "deployment's default image, or one its operators allow (docs/images.md); null: the "
        "default image",
    )
    preserve_entrypoint: bool = Field(
        default=False,
        description="run the image's own entrypoint and command, with no SSH (needs image; "
        "not with jupyter nor on more than one node): ready once its container runs, its "
        "output in the logs",
    )
    # `reserve --dockerfile` (gpudev/image_builds/builds.py): a context the caller uploaded; the
    # image is built before the reservation joins the queue (422 when not theirs).
    image_build: str | None = Field(
        default=None,
        pattern=r"^[a-f0-9]{64}$",
        description="the sha256 of a build context the caller uploaded (POST /v1/images/"
        "uploads): its image is built, or reused when built already (not with image)",
    )
    docker: bool = Field(
        default=False,
        description="a Docker daemon beside the dev server, DOCKER_HOST set in SSH sessions "
        "(if the operators allow it; one whole GPU node, not with profiling): docs/images.md",
    )


class ExtendRequest(BaseModel):
    hours: float = Field(
        allow_inf_nan=False,
        description="1 to 24; the total since launch stays within 48",
        json_schema_extra={"minimum": MIN_EXTENSION_HOURS, "maximum": MAX_EXTENSION_HOURS},
    )


class IdleTimeoutRequest(BaseModel):
    idle_timeout: str = Field(
        min_length=1,
        max_length=20,
        json_schema_extra={"pattern": IDLE_TIMEOUT_PATTERN},
        description="2h, 90m, or none (never reclaimed); the idle clock restarts",
    )


class AddUserRequest(BaseModel):
    github_username: str = Field(
        min_length=1, max_length=39, json_schema_extra={"pattern": GITHUB_USERNAME_SHAPE}
    )


# The columns of `ReservationShown` and two waits computed from the others (no docstring:
# it would become the schema's description in the OpenAPI document).
class ReservationView(ReservationShown):
    # Clock minutes until the allocator's estimated start, as of this answer (0 once granted;
    # null: no estimate, or it never fits). Stored as a moment (`estimated_start_at`).
    estimated_wait_minutes: int | None
    # Clock minutes until `expires_at`, as of this answer, in the lifecycle's clock like every
    # duration and ETA (under a compressed clock an hour lasts `seconds_per_hour` seconds).
    expires_in_minutes: int | None = None

    @classmethod
    def of(cls, reservation: Reservation) -> ReservationView:
        now = datetime.now(UTC)
        fields = reservation.model_dump(include=set(cls.model_fields))
        if reservation.jupyter_available is False:  # None: a pod from before the check
            fields["jupyter_url"] = None
        fields["estimated_wait_minutes"] = clock_minutes_until(reservation.estimated_start_at, now)
        if reservation.status == ReservationStatus.ACTIVE and reservation.launched_at:
            # The expiry its hours give, extensions included: what the next checkpoint
            # applies (within the change-wake bound) and what ends it, so an extension's
            # reply and `show` say the new expiry at once.
            fields["expires_at"] = reservation.launched_at + timedelta(
                seconds=reservation.duration_hours * lifecycle_settings().seconds_per_hour
            )
        if not reservation.status.is_final:
            fields["expires_in_minutes"] = clock_minutes_until(fields["expires_at"], now)
        return cls.model_validate(fields)


def operator_view(reservation: Reservation) -> ReservationView:
    """A reservation as operators see it (/v1/admin): everything but Jupyter's URL, whose
    token opens a shell as the owner's `dev` (sudo) in the pod; only the owner sees it."""
    return ReservationView.of(reservation).model_copy(update={"jupyter_url": None})


def clock_minutes_until(moment: datetime | None, now: datetime) -> int | None:
    """Clock minutes from `now` until `moment` (0 once it passed), rounded up: under a
    compressed clock an hour lasts `seconds_per_hour` real seconds. None without a moment."""
    if moment is None:
        return None
    seconds = max(0.0, (moment - now).total_seconds())
    return math.ceil(seconds * 60 / lifecycle_settings().seconds_per_hour)


class ReservationList(BaseModel):
    reservations: list[ReservationView]
    limit: int
    offset: int

    @classmethod
    def of(cls, reservations: Iterable[Reservation], limit: int, offset: int) -> ReservationList:
        views = [ReservationView.of(r) for r in reservations]
        return cls(reservations=views, limit=limit, offset=offset)


class EventView(BaseModel):
    """One entry of a reservation's timeline: when, what kind (a status change, hours added,
    a start-up step, the log tail of a failed start), the status it moved from and to (the
    same for the kinds that are not a change), and what it said."""

    at: datetime
    kind: EventKind
    from_status: ReservationStatus | None
    to_status: ReservationStatus
    detail: str | None

    @classmethod
    def of(cls, event: ReservationEvent) -> EventView:
        return cls(
            at=event.at,
            kind=event.kind,
            from_status=event.from_status,
            to_status=event.to_status,
            detail=event.detail,
        )


class EventList(BaseModel):
    events: list[EventView]
    limit: int
    offset: int

    @classmethod
    def of(cls, events: Iterable[ReservationEvent], limit: int, offset: int) -> EventList:
        return cls(events=[EventView.of(e) for e in events], limit=limit, offset=offset)
