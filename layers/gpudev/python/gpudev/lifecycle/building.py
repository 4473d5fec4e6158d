"""The reservation's image build (`reserve --dockerfile`; docs/images.md#built-images): the
states `Build the image` → `Wait for the build` of statemachines/reservation.asl.json, run
after the execution takes the reservation and before it joins the queue (allocation's
queue.sql leaves a reservation out while its image is built, so it never holds the queue
behind it).

Each call starts the build if none stands (a build that failed before this reservation was
made is tried again), reads its state from CodeBuild, and answers: `built` (the
reservation's image columns now name the built digest), `building` (with the seconds to
wait; the status line says the phase or step), `failed` (one line of reason, the build
log's tail on the timeline as a failed start's pod output is), or `cancel`."""

from __future__ import annotations

from datetime import UTC, datetime

from gpudev.errors import NotFound, Unavailable
from gpudev.image_builds.builds import ImageBuilds, status_line
from gpudev.lifecycle.payloads import BuildImage, BuildImageOutput
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.lifecycle.taxonomy import StateChanged, Transient
from gpudev.models import Reservation, TimelineEntry

MAX_REASON = 400  # the reason is one line; the log's tail is on the timeline


def build_image(
    lc: Lifecycle, task: BuildImage, builds: ImageBuilds | None = None
) -> BuildImageOutput:
    reservation = lc.reservation(task.reservation_id)
    if reservation.status.is_final or reservation.cancel_requested_at is not None:
        return BuildImageOutput(outcome="cancel")
    context_hash = reservation.image_build
    if context_hash is None or reservation.image is not None:
        return BuildImageOutput(outcome="built")
    builds = builds or ImageBuilds.deployed(lc.conn)
    try:
        row = builds.refresh(builds.start(context_hash, retry_failed_before=reservation.created_at))
    except NotFound as missing:  # the CLI uploads before it submits: the upload was lost
        return BuildImageOutput(
            outcome="failed", reason=f"the image build did not start: {missing}"
        )
    except Unavailable as error:  # S3, CodeBuild or ECR did not answer: retried (Transient)
        raise Transient(str(error)) from error
    if row.status == "succeeded":
        assert row.image_digest is not None
        _use_image(lc, builds, reservation, row.image_digest)
        return BuildImageOutput(outcome="built")
    if row.status == "failed":
        tail = row.log_tail or "(no log)"
        # The whole tail on the timeline, as a failed start's pod output is (`reserve` and
        # `show` print it); the reason, one line, ends with the log's last line.
        lc.rows.record_events(
            reservation.reservation_id, [TimelineEntry("pod_log", tail, "pod_log")]
        )
        return BuildImageOutput(outcome="failed", reason=failure_reason(row.phase, tail))
    waited = (datetime.now(UTC) - row.claimed_at).total_seconds()
    if waited > builds.settings.wait_limit_seconds:
        return BuildImageOutput(
            outcome="failed",
            reason=f"the image build did not end within {waited // 60:.0f} minutes "
            f"({row.phase or 'not started'})",
        )
    builds.rows.reservation_progress(reservation.reservation_id, status_line(row))
    return BuildImageOutput(outcome="building", seconds=builds.settings.poll_seconds)


def failure_reason(phase: str | None, tail: str) -> str:
    """One readable line: the phase that failed and the log's last line of the build's own
    output (CodeBuild's `[Container] …` lines say only which phase failed)."""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    own = [line for line in lines if not line.startswith("[Container]")]
    last = (own or lines or [""])[-1]
    reason = f"the image build failed ({phase or 'unknown phase'})"
    reason += f": {last}" if last else ""
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…"


def _use_image(lc: Lifecycle, builds: ImageBuilds, reservation: Reservation, digest: str) -> None:
    assert reservation.image_build is not None
    written = builds.rows.use_in_reservation(
        reservation.reservation_id,
        reservation.image_build,
        builds.image(reservation.image_build),
        digest,
        builds.pull(digest),
    )
    if not written:
        raise StateChanged("the reservation left 'queued' while its image was built")
