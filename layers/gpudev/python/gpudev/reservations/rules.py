"""What a reservation request must satisfy, checked at submit time with messages a user can
act on (reference §2.4 and §3, minus its defects: types are case-insensitive, fractional hours
are allowed, a T4 node cannot be asked for 8 GPUs, and a type the cluster has no nodes for is
refused at once instead of waiting 48 h for capacity that cannot come)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpudev.errors import InvalidRequest, shown
from gpudev.models import GpuType

MIN_MINUTES = 5
# The minimum as printed (4 decimals) is the minimum accepted: `--hours 0.0833` is 5 minutes.
MIN_HOURS = round(MIN_MINUTES / 60, 4)
MAX_HOURS = 24.0
HOURS_ALLOWED = f"{MIN_MINUTES} minutes ({MIN_HOURS} h) to {MAX_HOURS:g} hours"
MULTINODE_TYPES = frozenset({"h100", "h200", "b200", "a100"})
MAX_NODES = 4
MIN_EXTENSION_HOURS = 1.0
MAX_EXTENSION_HOURS = 24.0
MAX_TOTAL_HOURS = 48.0  # since launch, extensions included
DISK_NAME = re.compile(r"^[A-Za-z0-9_-]{1,50}$")
GITHUB_USERNAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$")
# The same names as JSON Schema says them (no lookahead; the length apart): the OpenAPI
# document's pattern for a GitHub username in a path.
GITHUB_USERNAME_SHAPE = r"^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$"
GITHUB_USERNAME_MAX = 39
# A reservation is named by its id or the first MIN_PREFIX or more of its characters.
MIN_PREFIX = 8
ID_LENGTH = 36
RESERVATION_ID_SHAPE = rf"^[0-9a-fA-F-]{{{MIN_PREFIX},{ID_LENGTH}}}$"
# The catalogue's types (migrations/0002_gpu_type_catalogue.sql; a unit test keeps the two
# equal): what a request may name, in any case (resolve_shape lower-cases it).
GPU_TYPES = ("t4", "t4-small", "l4", "a10g", "a100", "h100", "h200", "b200", "cpu-x86", "cpu-arm")


@dataclass(frozen=True)
class Shape:
    """A valid request's resolved shape."""

    gpu_type: GpuType
    gpu_count: int
    total_nodes: int


def _choices(gpu_type: GpuType) -> list[int]:
    if gpu_type.is_cpu_only:
        return [0]
    single = [n for n in (1, 2, 4, 8) if n <= gpu_type.max_per_node]
    if gpu_type.gpu_type in MULTINODE_TYPES and gpu_type.max_per_node == 8:
        single += [8 * nodes for nodes in range(2, MAX_NODES + 1)]
    return single


def resolve_shape(catalogue: list[GpuType], requested_type: str, gpu_count: int) -> Shape:
    by_name = {t.gpu_type: t for t in catalogue}
    gpu_type = by_name.get(requested_type.strip().lower())
    if gpu_type is None:
        valid = ", ".join(sorted(by_name))
        raise InvalidRequest(
            f"unknown GPU type {shown(requested_type)}; valid types: {valid}",
            field="gpu_type",
            allowed=valid,
            hint="`gpu-dev avail` lists the types and what is free",
        )
    allowed = _choices(gpu_type)
    if gpu_count not in allowed:
        if gpu_type.is_cpu_only:
            hint = f"{gpu_type.gpu_type} is CPU-only: ask for 0 GPUs"
        else:
            hint = f"{gpu_type.gpu_type} accepts {', '.join(map(str, allowed))} GPUs"
            if gpu_count > gpu_type.max_per_node and gpu_type.gpu_type not in MULTINODE_TYPES:
                hint += f" (one node has {gpu_type.max_per_node}; multinode is only for "
                hint += f"{', '.join(sorted(MULTINODE_TYPES))})"
        raise InvalidRequest(
            f"cannot reserve {gpu_count} GPUs: {hint}",
            field="gpu_count",
            allowed=", ".join(map(str, allowed)),
        )
    nodes = max(1, gpu_count // 8) if gpu_count > gpu_type.max_per_node else 1
    shape = Shape(gpu_type, gpu_count, nodes)
    _check_possible(shape, catalogue)
    return shape


def types_with_nodes(catalogue: list[GpuType]) -> list[str]:
    """The types whose node groups can hold a node as last measured, in the catalogue's
    order (GPU types by name, then CPU types)."""
    return [t.gpu_type for t in catalogue if t.has_possible_nodes]


def beyond_the_cluster(gpu_type: GpuType, total_nodes: int, catalogue: list[GpuType]) -> str | None:
    """Why `total_nodes` nodes of `gpu_type` can never be placed in this cluster, in one
    sentence naming the types that have nodes; None when they can, or when the availability
    updater has not measured the type yet. "Possible" counts what the type's node groups can
    scale to (their Auto Scaling MaxSize), not only what runs now: a group that scales from
    zero is capacity that can come (availability/compute.py)."""
    if gpu_type.has_possible_nodes is None or total_nodes <= gpu_type.max_nodes:
        return None
    others = ", ".join(types_with_nodes(catalogue)) or "none"
    if gpu_type.max_nodes == 0:
        head = f"no {gpu_type.gpu_type} nodes in this cluster"
    else:
        head = (
            f"{gpu_type.gpu_type} has at most {gpu_type.max_nodes} "
            f"node{'s' if gpu_type.max_nodes > 1 else ''} in this cluster and this request "
            f"needs {total_nodes}"
        )
    return f"{head}; types with nodes: {others}"


def _check_possible(shape: Shape, catalogue: list[GpuType]) -> None:
    sentence = beyond_the_cluster(shape.gpu_type, shape.total_nodes, catalogue)
    if sentence is not None:
        raise InvalidRequest(
            sentence,
            field="gpu_type" if shape.gpu_type.max_nodes == 0 else "gpu_count",
            allowed=", ".join(types_with_nodes(catalogue)),
            hint="`gpu-dev avail` lists the types and what is free",
        )


def _check_pattern(
    pattern: re.Pattern[str], value: str, what: str, field: str, allowed: str, advice: str
) -> None:
    if not pattern.match(value):
        raise InvalidRequest(
            f"invalid {what} {shown(value)}: {advice}", field=field, allowed=allowed
        )


def check_disk_name(name: str) -> None:
    allowed = "1-50 letters, digits, '-' or '_'"
    _check_pattern(DISK_NAME, name, "disk name", "disk_name", allowed, f"use {allowed}")


def check_github_username(name: str) -> None:
    allowed = "1-39 letters, digits or single inner hyphens"
    _check_pattern(GITHUB_USERNAME, name, "GitHub username", "github_user", allowed, allowed)


def owner_github_user(requested: str | None, in_settings: str | None) -> str:
    """Whose GitHub keys open the pod: the request's user, else the one in the caller's
    settings. Neither: refused, since nobody could log in."""
    github_user = requested or in_settings
    if github_user is None:
        raise InvalidRequest(
            "no GitHub username to install SSH keys from: set a GitHub username with "
            "`gpu-dev config set github_user NAME`, or pass --github-user"
        )
    check_github_username(github_user)
    return github_user


def check_extension(total_hours: float, hours: float) -> None:
    """An extension is 1-24 h and the total since launch stays within 48 h."""
    if not MIN_EXTENSION_HOURS <= hours <= MAX_EXTENSION_HOURS:
        raise InvalidRequest(
            f"extend by {MIN_EXTENSION_HOURS:g} to {MAX_EXTENSION_HOURS:g} hours at a time; "
            f"got {hours:g}",
            field="hours",
            allowed=f"{MIN_EXTENSION_HOURS:g} to {MAX_EXTENSION_HOURS:g} hours",
        )
    if total_hours + hours > MAX_TOTAL_HOURS + 1e-9:
        left = max(0.0, MAX_TOTAL_HOURS - total_hours)
        raise InvalidRequest(
            f"cannot extend by {hours:g} h: a reservation lasts at most {MAX_TOTAL_HOURS:g} h "
            f"in total and this one has {total_hours:g} h ({left:g} h left to add)",
            field="hours",
            limit=int(MAX_TOTAL_HOURS),
        )
