"""Reservation requests from the API: validate at submit time, record, and enqueue the job,
in three SQL round trips (the caller's request lock, users/request_lock.sql; the
username's bound principal, catalogue and named disk; caller, binding, limits, reservation
and its create job in the outbox in one statement, which returns the first reservation when
a client request id repeats), then a fourth after commit (the sent job's outbox row
deleted).

Changes to a live reservation (cancel, extend, add or remove a user, Jupyter) are recorded
on its row with their job in the outbox by one statement; its execution applies them. Every
job is sent after its transaction commits (gpudev/outbox.py), so give these services a connection
in autocommit mode (`autocommit_connection()`): their `conn.transaction()` is the commit.
A refused send is not an error: the change is saved and the sweeper's relay sends the job."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

import psycopg

from gpudev.callers import bound_user
from gpudev.docker.request import check_docker_request, check_docker_shape
from gpudev.errors import Conflict, InvalidRequest, NotFound, shown
from gpudev.identity import Caller, bound_elsewhere, require_bound
from gpudev.images.entrypoint import (
    check_entrypoint_jupyter,
    check_entrypoint_nodes,
    check_entrypoint_request,
)
from gpudev.images.resolve import ImageResolver
from gpudev.jobs import JobQueue
from gpudev.models import Reservation, ReservationEvent, ReservationStatus, UserLimits
from gpudev.outbox import commit_then_send, send_after_commit
from gpudev.repositories import NewReservation, ReservationsRepository, UsersRepository
from gpudev.repositories.reservations import Changed, NamedDisk
from gpudev.repositories.utilisation import set_idle_timeout
from gpudev.reservations.limits import refusal
from gpudev.reservations.rules import (
    ID_LENGTH,
    MIN_PREFIX,
    check_disk_name,
    check_extension,
    check_github_username,
    owner_github_user,
    resolve_shape,
)
from gpudev.reservations.schemas import ReservationRequest
from gpudev.settings import (
    docker_settings,
    idle_settings,
    lifecycle_settings,
    user_limit_settings,
)
from gpudev.utilisation.schemas import RecentUseList, ReservationUse
from gpudev.utilisation.timeout import parse_idle_timeout
from gpudev.utilisation.views import recent_use, reservation_use

ID_CHARACTERS = re.compile(r"^[0-9a-f-]+$")


def submit_reservation(
    conn: psycopg.Connection[Any],
    queue: JobQueue,
    caller: Caller,
    request: ReservationRequest,
    limits: UserLimits | None = None,
    images: ImageResolver | None = None,
    allow_docker: bool | None = None,
) -> tuple[Reservation, bool]:
    """The reservation and whether this call created it (False: a repeated request id).
    Username bound to another principal: `NotAuthorized`; over a per-user limit:
    `LimitReached`; an image malformed (`MalformedInput`), not allowed or missing
    (`InvalidRequest`): nothing is written in any case. The image is resolved before the
    transaction: its ECR call holds no lock. `allow_docker`: whether `docker` may be asked
    for (None: the deployment's `gpudev:allowDocker`)."""
    limits = limits or UserLimits.of(user_limit_settings())
    idle = idle_settings()
    idle_minutes = parse_idle_timeout(
        request.idle_timeout, idle.timeout_default_minutes, idle.timeout_max_minutes
    )
    if request.disk_name is not None:
        check_disk_name(request.disk_name)
    if request.image_build is not None:
        _check_image_build(conn, caller, request)
    if request.preserve_entrypoint:
        check_entrypoint_request(request.image, request.jupyter)
    if request.docker:
        allowed = docker_settings().allow_docker if allow_docker is None else allow_docker
        check_docker_request(allowed, request.profiling)
    image = None
    if request.image is not None:
        image = (images or ImageResolver.deployed()).resolve(request.image)
    reservations = ReservationsRepository(conn)
    with conn.transaction():
        # The caller's request lock until the transaction ends, in its own statement, so the
        # context and the submit see what a request before this one committed (a submit, a
        # rename or delete of the named disk). The context reads the username's binding:
        # another principal is refused before anything is written.
        UsersRepository(conn).take_request_lock(caller.username)
        context = reservations.submit_context(
            caller.username, caller.principal_arn, request.disk_name
        )
        require_bound(caller, context.bound_principal)
        shape = resolve_shape(context.catalogue, request.gpu_type, request.gpu_count)
        if request.preserve_entrypoint:
            check_entrypoint_nodes(shape.total_nodes)
        if request.docker:
            check_docker_shape(shape.gpu_type, shape.gpu_count, shape.total_nodes)
        if request.disk_name is not None:
            _check_disk_usable(request.disk_name, context.disk)
        github_user = owner_github_user(request.github_user, context.github_user)
        new = NewReservation(
            reservation_id=uuid.uuid4(),
            user_id=caller.username,
            client_request_id=request.client_request_id,
            name=request.name,
            gpu_type=shape.gpu_type.gpu_type,
            gpu_count=shape.gpu_count,
            total_nodes=shape.total_nodes,
            instance_type=shape.gpu_type.instance_type,
            duration_hours=request.hours,
            github_user=github_user,
            disk_name=request.disk_name,
            jupyter_enabled=request.jupyter,
            profiling=request.profiling,
            image=image.reference if image else None,
            image_digest=image.digest if image else None,
            image_pull=image.pull if image else None,
            preserve_entrypoint=request.preserve_entrypoint,
            docker=request.docker,
            idle_timeout_minutes=idle_minutes,
            image_build=request.image_build,
        )
        submitted = reservations.submit(caller.username, caller.principal_arn, new, limits)
        if not submitted.bound:
            # Another principal's first call bound the username after the context was
            # read: neither a repeat nor a limit, and nothing was written.
            raise bound_elsewhere(caller)
        if submitted.reservation is None:
            raise refusal(limits, submitted.usage, new.gpu_count) or Conflict(
                "another request for this reservation is in progress; retry"
            )
        reservation = submitted.reservation
    if submitted.job is not None:
        # After commit: a refused send leaves the outbox row to the sweeper's relay.
        send_after_commit(conn, queue, submitted.job)
    return reservation, submitted.created


def _check_image_build(
    conn: psycopg.Connection[Any], caller: Caller, request: ReservationRequest
) -> None:
    """`--dockerfile`: not with an image named, nor with --preserve-entrypoint (its check
    needs an image at submit); a context the caller asked to upload (image_builds/)."""
    from gpudev.repositories.image_builds import ImageBuildsRepository
    from gpudev.settings import image_build_settings

    if request.image is not None:
        raise InvalidRequest(
            "--dockerfile and --image do not go together: the image is either built from "
            "the Dockerfile or named",
            field="image_build",
        )
    if request.preserve_entrypoint:
        raise InvalidRequest(
            "--preserve-entrypoint is not available with --dockerfile yet: build the image "
            "with `gpu-dev image build` and reserve it with --image",
            field="preserve_entrypoint",
        )
    assert request.image_build is not None
    if not image_build_settings().enabled:
        raise InvalidRequest(
            "this deployment builds no images: its operators have not deployed the CodeBuild "
            "project (docs/images.md#built-images); reserve with --image instead",
            field="image_build",
        )
    rows = ImageBuildsRepository(conn)
    if rows.owned_since(request.image_build, caller.username) is None:
        raise InvalidRequest(
            f"no build context {request.image_build[:12]} of yours: upload it first "
            "(`gpu-dev reserve --dockerfile` does)",
            field="image_build",
        )
    standing = rows.get(request.image_build)
    if standing is None or standing.status == "failed":  # its reservation starts a build
        rows.require_build_room(caller.username, image_build_settings().max_building_per_user)


def _check_disk_usable(name: str, disk: NamedDisk | None) -> None:
    if disk is None:
        raise InvalidRequest(
            f"you have no disk named {shown(name)}: create it with "
            f"`gpu-dev disk create {name}` or reserve with --disk none",
            field="disk_name",
        )
    if disk.state == "deleted":
        raise InvalidRequest(f"disk {name!r} is marked for deletion; choose another disk")
    if disk.state == "in_use":
        holder = str(disk.reservation_id)[:8] if disk.reservation_id else "another reservation"
        raise Conflict(f"disk {name!r} is in use by reservation {holder}; use another disk")
    if disk.state == "cloning":
        raise Conflict(
            f"disk {name!r} is still being cloned: see `gpu-dev disk show {name}` and "
            "reserve once its operation completed"
        )


def reservation_id_or_prefix(text: str) -> str:
    """A reservation id or a prefix of at least 8 of its characters, lower-cased; anything
    else is refused with a sentence (a malformed id is not "not found")."""
    wanted = text.strip().lower()
    if not MIN_PREFIX <= len(wanted) <= ID_LENGTH or not ID_CHARACTERS.match(wanted):
        raise InvalidRequest(
            f"{shown(text)} is not a reservation id: give the id (hex digits and "
            f"dashes) or its first {MIN_PREFIX} or more characters",
            field="reservation_id",
            allowed=f"{MIN_PREFIX}-{ID_LENGTH} hex digits and dashes",
            hint="`gpu-dev list` shows reservations' ids",
        )
    return wanted


def find_reservation(
    conn: psycopg.Connection[Any], caller: Caller, id_or_prefix: str
) -> Reservation:
    """By full id or a unique prefix of at least 8 characters; others' are never found.
    One round trip, which also refuses a caller whose username is bound to another
    principal."""
    wanted = reservation_id_or_prefix(id_or_prefix)
    bound_principal, matches = ReservationsRepository(conn).find_by_prefix(
        caller.username, caller.principal_arn, wanted
    )
    require_bound(caller, bound_principal)
    if not matches:
        raise NotFound(f"no reservation {shown(wanted)}")
    if len(matches) > 1:
        raise Conflict(f"{shown(wanted)} matches more than one reservation: give more characters")
    return matches[0]


# How a route on one reservation finds it: `find_reservation` (the caller's own; another
# user's is 404) or, for operators, `usage.operators.find_any_reservation` (anyone's).
ReservationFinder = Callable[[psycopg.Connection[Any], Caller, str], Reservation]


def reservation_timeline(
    conn: psycopg.Connection[Any],
    caller: Caller,
    id_or_prefix: str,
    limit: int,
    offset: int,
    find: ReservationFinder = find_reservation,
) -> list[ReservationEvent]:
    """One page of a reservation's timeline, oldest first (two round trips: the reservation
    as `find` finds it, then the page). The owner's route and the operators' share it; only
    `find` differs."""
    reservation = find(conn, caller, id_or_prefix)
    return ReservationsRepository(conn).events(reservation.reservation_id, limit, offset)


def caller_reservations(
    conn: psycopg.Connection[Any],
    caller: Caller,
    statuses: list[ReservationStatus] | None,
    limit: int,
    offset: int,
) -> list[Reservation]:
    """The caller's reservations, newest first (two round trips: the bound user, the page)."""
    bound_user(conn, caller)
    return ReservationsRepository(conn).list_for_user(caller.username, statuses, limit, offset)


def _live(reservation: Reservation, action: str) -> None:
    if reservation.status.is_final:
        raise Conflict(
            f"cannot {action} reservation {str(reservation.reservation_id)[:8]}: "
            f"it is {reservation.status}"
        )


def _record_change(
    conn: psycopg.Connection[Any],
    queue: JobQueue,
    reservation: Reservation,
    action: str,
    apply: Callable[[ReservationsRepository], Changed | None],
) -> Reservation:
    """Apply one change to the row with its wake-up job in the outbox (one statement),
    commit, then send the job. `apply` returns None when nothing changed (a repeat): then
    no job is written."""
    _live(reservation, action)
    reservations = ReservationsRepository(conn)

    def unchanged() -> Reservation:
        current = reservations.get(reservation.reservation_id)
        assert current is not None
        _live(current, action)  # it ended meanwhile
        return current

    return commit_then_send(conn, queue, lambda: apply(reservations), unchanged)


def request_extension(
    conn: psycopg.Connection[Any],
    queue: JobQueue,
    caller: Caller,
    id_or_prefix: str,
    hours: float,
) -> Reservation:
    reservation = find_reservation(conn, caller, id_or_prefix)
    _live(reservation, "extend")
    check_extension(reservation.duration_hours, hours)
    return _record_change(
        conn,
        queue,
        reservation,
        "extend",
        lambda repo: repo.extend(
            reservation.reservation_id, hours, lifecycle_settings().seconds_per_hour
        ),
    )


def add_user(
    conn: psycopg.Connection[Any],
    queue: JobQueue,
    caller: Caller,
    id_or_prefix: str,
    github_user: str,
) -> Reservation:
    check_github_username(github_user)
    reservation = find_reservation(conn, caller, id_or_prefix)
    return _record_change(
        conn,
        queue,
        reservation,
        "add a user to",
        lambda repo: repo.add_user(reservation.reservation_id, github_user),
    )


def remove_user(
    conn: psycopg.Connection[Any],
    queue: JobQueue,
    caller: Caller,
    id_or_prefix: str,
    github_user: str,
) -> Reservation:
    """Take an added GitHub user off a live reservation (any status before the end, like
    add-user): the pod's control loop then removes their account, keys and sessions. A
    user who is not there is refused (NotFound) before anything is written."""
    check_github_username(github_user)
    reservation = find_reservation(conn, caller, id_or_prefix)
    _live(reservation, "remove a user from")
    if github_user.lower() not in {u.lower() for u in reservation.secondary_users}:
        rid = str(reservation.reservation_id)[:8]
        raise NotFound(
            f"{shown(github_user)} is not a user of reservation {rid} "
            f"(added users: {', '.join(reservation.secondary_users) or 'none'})",
            field="github_username",
        )
    return _record_change(
        conn,
        queue,
        reservation,
        "remove a user from",
        lambda repo: repo.remove_user(reservation.reservation_id, github_user),
    )


def set_jupyter(
    conn: psycopg.Connection[Any],
    queue: JobQueue,
    caller: Caller,
    id_or_prefix: str,
    enabled: bool,
) -> Reservation:
    reservation = find_reservation(conn, caller, id_or_prefix)
    check_entrypoint_jupyter(reservation.preserve_entrypoint, enabled)
    if enabled and reservation.jupyter_available is False:  # its pod said: nothing to start
        raise Conflict(
            f"Jupyter cannot be enabled on reservation {str(reservation.reservation_id)[:8]}: "
            f"{reservation.jupyter_error}",
            hint="reserve again once your operators deploy the dev image (deploy/dev-image)",
        )
    return _record_change(
        conn,
        queue,
        reservation,
        "change Jupyter on",
        lambda repo: repo.set_jupyter(reservation.reservation_id, enabled),
    )


def request_cancel(
    conn: psycopg.Connection[Any], queue: JobQueue, caller: Caller, id_or_prefix: str
) -> Reservation:
    """Record the cancel request and queue it once; a repeat is accepted and changes nothing."""
    return record_cancel(conn, queue, find_reservation(conn, caller, id_or_prefix))


def record_cancel(
    conn: psycopg.Connection[Any],
    queue: JobQueue,
    reservation: Reservation,
    reason: str | None = None,
) -> Reservation:
    """The one cancel path, the owner's or an operator's (with the `reason` its final status
    records): stamp the request with its job, commit, send. A repeat changes nothing."""
    _live(reservation, "cancel")
    return commit_then_send(
        conn,
        queue,
        lambda: ReservationsRepository(conn).request_cancel(reservation.reservation_id, reason),
        lambda: reservation,  # already requested: the first request stands
    )


def change_idle_timeout(
    conn: psycopg.Connection[Any], caller: Caller, id_or_prefix: str, text: str
) -> Reservation:
    """`edit --idle-timeout`: checked before anything is written; applies at the updater's
    next run (a warning it had is withdrawn now, from the banner at the next checkpoint)."""
    idle = idle_settings()
    minutes = parse_idle_timeout(text, idle.timeout_default_minutes, idle.timeout_max_minutes)
    reservation = find_reservation(conn, caller, id_or_prefix)
    _live(reservation, "change the idle timeout of")
    changed = set_idle_timeout(conn, reservation.reservation_id, minutes)
    if changed is None:
        current = find_reservation(conn, caller, str(reservation.reservation_id))
        _live(current, "change the idle timeout of")
        raise Conflict(
            f"reservation {str(reservation.reservation_id)[:8]} is being ended as idle "
            f"({current.idle_ending}); its idle timeout can no longer change"
        )
    return changed


def caller_recent_use(conn: psycopg.Connection[Any], caller: Caller) -> RecentUseList:
    """The caller's active reservations' last minutes of GPU use (`list`): the caller's own
    principal only (another principal deriving the same username: NotAuthorized, nothing
    read)."""
    bound_user(conn, caller)
    return recent_use(conn, caller)


def reservation_utilisation(
    conn: psycopg.Connection[Any], caller: Caller, id_or_prefix: str
) -> ReservationUse:
    """The caller's reservation's last clock hour per GPU (`show`)."""
    return reservation_use(conn, find_reservation(conn, caller, id_or_prefix).reservation_id)
