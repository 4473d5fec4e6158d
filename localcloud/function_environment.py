"""The environment our handlers read through gpudev.settings, as CDK would set it.

Every function shares this process here (in AWS each has its own), so one environment
serves them all; setting it returns what restores the process's own, for the stop.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from cdk_app.declaration import Deployment
from gpudev.aws import aws_clients
from gpudev.cluster.eks import reset_cluster_api_client
from gpudev.settings import reset_settings_cache
from localcloud.options import Options
from localcloud.registry import LOCAL_TOOLS_IMAGE

# GitHub users' public keys as the lifecycle's key seam sees them locally (no network).
LOCAL_GITHUB_KEYS = {
    user: [f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{user.upper():A<43} {user}@local"]
    for user in ("alice", "bob", "octocat")
}


def most_lenient_database_limits(deployment: Deployment) -> dict[str, str]:
    """Every function shares one pool here, so it gets the longest declared timeouts of
    the function groups (the migrations' "none" aside: they run before the pool exists)."""
    groups = [f.database for f in deployment.functions if f.database and f.database.role]
    if not groups:
        return {}
    return {
        "DB_STATEMENT_TIMEOUT_MS": str(max(g.statement_timeout_ms for g in groups)),
        "DB_LOCK_TIMEOUT_MS": str(max(g.lock_timeout_ms for g in groups)),
    }


def lifecycle_environment(options: Options, state_dir: Path) -> dict[str, str]:
    keys_file = state_dir / "github_keys.json"
    keys_file.parent.mkdir(parents=True, exist_ok=True)
    keys_file.write_text(json.dumps(LOCAL_GITHUB_KEYS, indent=2))
    return (
        {
            "LIFECYCLE_SECONDS_PER_HOUR": str(options.seconds_per_hour),
            "LIFECYCLE_READY_TIMEOUT_SECONDS": str(options.ready_timeout_seconds),
            "LIFECYCLE_READY_POLL_SECONDS": str(options.ready_poll_seconds),
            "LIFECYCLE_READY_WATCH_SECONDS": str(options.ready_watch_seconds),
            "LIFECYCLE_GITHUB_KEYS_FILE": str(keys_file),
        }
        | _user_limit_environment(options)
        | _pod_image_environment(options)
        | ({"PREPULLER_TOOLS_IMAGE": LOCAL_TOOLS_IMAGE} if options.prepull else {})
    )


def _pod_image_environment(options: Options) -> dict[str, str]:
    image = options.pod_image
    return {} if image is None else {"LIFECYCLE_POD_IMAGE": image}


def _user_limit_environment(options: Options) -> dict[str, str]:
    limits = {
        "MAX_LIVE_RESERVATIONS_PER_USER": options.max_live_reservations_per_user,
        "MAX_GPUS_PER_USER": options.max_gpus_per_user,
        "API_REQUESTS_PER_MINUTE": options.api_requests_per_minute,
        "API_REQUEST_BURST": options.api_request_burst,
    }
    return {name: str(value) for name, value in limits.items() if value is not None}


def forget_cached_configuration() -> None:
    """Settings and clients are cached per execution environment; ours just changed."""
    reset_settings_cache()
    aws_clients.cache_clear()
    reset_cluster_api_client()


def set_environment(values: dict[str, str]) -> Callable[[], None]:
    """Set `values` in this process's environment; what restores the previous values."""
    saved = {name: os.environ.get(name) for name in values}

    def restore() -> None:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        forget_cached_configuration()

    os.environ.update(values)
    forget_cached_configuration()
    return restore
