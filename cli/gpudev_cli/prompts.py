"""Interactive pickers for `reserve` when a person is at the terminal and a required value
is missing: the type from the availability table, then the count, then the hours. They ask
on stderr, so stdout holds only the result."""

from __future__ import annotations

from typing import Any

import click

MULTINODE_TYPES = ("h100", "h200", "b200", "a100")


def count_choices(gpu_type: dict[str, Any]) -> list[int]:
    per_node = gpu_type["max_per_node"]
    if per_node == 0:
        return [0]
    choices = [n for n in (1, 2, 4, 8) if n <= per_node]
    if gpu_type["gpu_type"] in MULTINODE_TYPES and per_node == 8:
        choices += [16, 24, 32]
    return choices


def pick_type(types: list[dict[str, Any]]) -> dict[str, Any]:
    by_name = {t["gpu_type"]: t for t in types}
    name = click.prompt(
        "GPU type", type=click.Choice(sorted(by_name), case_sensitive=False), err=True
    )
    return by_name[name.lower()]


def pick_count(gpu_type: dict[str, Any]) -> int:
    choices = count_choices(gpu_type)
    if choices == [0]:
        return 0
    return int(
        click.prompt(
            "GPUs",
            type=click.Choice([str(c) for c in choices]),
            default=str(choices[0]),
            err=True,
        )
    )


MIN_HOURS = 0.0833  # 5 minutes, as the API states and accepts it


def pick_hours() -> float:
    return float(
        click.prompt(
            f"Hours (5 minutes = {MIN_HOURS}, to 24)",
            type=click.FloatRange(MIN_HOURS, 24),
            default=8.0,
            err=True,
        )
    )
