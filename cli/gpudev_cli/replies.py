"""What `gpu-dev edit` and `extend` answer: what was recorded and when it applies, from the
reservation the API returned (docs/lifecycle.md "When a change applies").

A queued or pending reservation has no pod: a change is kept on its row and applies when it
starts. A preparing one applies it once its pod is ready. An active one applies it at its
next checkpoint: a change wakes the execution at once, unless one woke it in the last
`CHANGE_WAKE_MINUTES` (gpudev/lifecycle/wakes.py), so within that bound."""

from __future__ import annotations

from typing import Any

from gpudev_cli import render
from gpudev_cli.context import short

# The lifecycle's default bound on change wakes (LifecycleSettings.change_wake_minutes).
CHANGE_WAKE_MINUTES = 3
NOT_STARTED = ("pending", "queued")


def applies(r: dict[str, Any]) -> str:
    """When a change to `r` reaches its pod."""
    if r["status"] in NOT_STARTED:
        return f"it is {r['status']}: this applies when it starts"
    if r["status"] == "preparing":
        return "it is starting: this applies once its pod is ready"
    return f"this applies to the running pod within {CHANGE_WAKE_MINUTES} minutes"


def user_added(r: dict[str, Any], user: str) -> str:
    """Added users log in with their GitHub public keys: say so, and when they cannot."""
    keys = f"https://github.com/{user}.keys"
    if user.lower() in {u.lower() for u in r.get("keyless_users") or []}:
        return (
            f"{user} added, but GitHub lists no public keys for them yet ({keys}): they can "
            f"log in once they add one; {applies(r)}."
        )
    return (
        f"{user} added: they log in with the public keys on their GitHub account ({keys}); "
        f"{applies(r)}. `gpu-dev show {short(r['reservation_id'])}` says if they have none."
    )


def user_removed(r: dict[str, Any], user: str) -> str:
    if r["status"] in NOT_STARTED:
        return f"{user} removed: they will not be let in when it starts."
    return f"{user} removed: their account, keys and sessions go ({applies(r)})."


def jupyter_changed(r: dict[str, Any], enabled: bool) -> str:
    if not enabled:
        return f"Jupyter off: {applies(r)}."
    opener = f"gpu-dev connect {short(r['reservation_id'])} --jupyter"
    return f"Jupyter on: {applies(r)}; then open it with `{opener}`."


def extended(r: dict[str, Any], hours: float) -> str:
    total = f"{r['duration_hours']:g} h in total"
    head = f"Extended {short(r['reservation_id'])} by {hours:g} h ({total})"
    if r["status"] in NOT_STARTED or r["status"] == "preparing":
        return f"{head}: the hours count from its start."
    expiry = (r.get("expires_at") or "")[:16].replace("T", " ")
    left = r.get("expires_in_minutes")
    in_text = f" (in {render.minutes(left)})" if left else ""
    return f"{head}: it now expires {expiry} UTC{in_text}."
