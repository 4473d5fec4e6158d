"""Per-user limits on live reservations and on GPUs held or queued, and the message a user
gets at one. The check itself runs in SQL (`sql/reservations/submit.sql`), under the
caller's advisory lock, so two submits at once are counted one after the other. The
limits and the usage are value types in models.py: the repository takes and returns them."""

from __future__ import annotations

from gpudev.errors import LimitReached
from gpudev.models import Usage, UserLimits

WAY_OUT = "cancel one with `gpu-dev cancel` or wait for one to end"


def _gpus(count: int) -> str:
    return f"{count} GPU" if count == 1 else f"{count} GPUs"


def refusal(limits: UserLimits, usage: Usage, gpu_count: int) -> LimitReached | None:
    """The error for a request of `gpu_count` GPUs on top of `usage`; None if it fits."""
    if usage.live_reservations >= limits.max_live_reservations:
        noun = "reservation" if usage.live_reservations == 1 else "reservations"
        return LimitReached(
            f"you have {usage.live_reservations} live {noun}, the limit is "
            f"{limits.max_live_reservations}; {WAY_OUT}",
            limit=limits.max_live_reservations,
        )
    if usage.live_gpus + gpu_count > limits.max_gpus:
        if usage.live_gpus == 0:
            return LimitReached(
                f"this request needs {_gpus(gpu_count)} and the limit is "
                f"{_gpus(limits.max_gpus)} per user (held or queued); ask for fewer GPUs",
                field="gpu_count",
                limit=limits.max_gpus,
            )
        return LimitReached(
            f"this request needs {_gpus(gpu_count)} and your live reservations already hold "
            f"or queue {usage.live_gpus}; the limit is {_gpus(limits.max_gpus)} per user; "
            f"{WAY_OUT}",
            field="gpu_count",
            limit=limits.max_gpus,
        )
    return None
