"""`gpu-dev usage` (your own GPU-hours, queue waits and endings) and `gpu-dev admin
list|events|logs|cancel|usage|dlq` (operators: sessions of the deployment's admin roles)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import click

from gpudev_cli import timeline, usage_render
from gpudev_cli.context import Context, progress

F = TypeVar("F", bound=Callable[..., object])


class Moment(click.ParamType[datetime, Any]):
    """An ISO date or date-time; without a zone it is in your local time zone."""

    name = "DATE[THH:MM]"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime:
        if isinstance(value, datetime):
            return value
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            self.fail(f"{value!r} is not a date (2026-11-20) or date-time (2026-11-20T09:00)")
        return moment.astimezone() if moment.tzinfo is None else moment


REPORT_OPTIONS = (
    click.option(
        "--since", type=Moment(), help="start (local time; default a week before --until)"
    ),
    click.option("--until", type=Moment(), help="end, exclusive (local time; default now)"),
    click.option("--by", type=click.Choice(["user", "type", "day"]), help="group the totals by"),
    click.option(
        "--chart", type=click.Path(dir_okay=False, path_type=Path),
        help="also draw GPU-hours by day and queue waits to this PNG (needs gpu-dev[chart])",
    ),
)  # fmt: skip


def report_options(function: F) -> F:
    for option in reversed(REPORT_OPTIONS):
        function = option(function)
    return function


def _report(
    obj: Context,
    path: str,
    since: datetime | None,
    until: datetime | None,
    by: str,
    chart: Path | None,
) -> None:
    """`--output csv` (a global option, csv only here) writes the totals as CSV."""
    if since and until and since >= until:
        raise click.BadParameter("--since must be before --until", param_hint="--since")
    obj.csv_allowed = True
    query = {"by": by}
    for name, moment in (("since", since), ("until", until)):
        if moment is not None:
            query[name] = moment.astimezone(UTC).isoformat()
    with progress.status("Counting GPU-hours…"):
        report = obj.client().request("GET", f"{path}?{urlencode(query)}")
    if chart is not None:
        from gpudev_cli.charts import save_chart

        save_chart(report, chart)
        progress.print(f"Chart written to {chart}")
    if obj.output == "csv":
        click.echo(usage_render.totals_csv(report), nl=False)
    else:
        obj.emit(report, usage_render.usage_tables)


def _report_command(name: str, path: str, default_by: str, help: str) -> click.Command:
    """A usage report command: the same options, another API path and default grouping."""

    @click.command(name, help=help)
    @report_options
    @click.pass_obj
    def command(
        obj: Context,
        since: datetime | None,
        until: datetime | None,
        by: str | None,
        chart: Path | None,
    ) -> None:
        _report(obj, path, since, until, by or default_by, chart)

    return command


usage = _report_command(
    "usage",
    "/v1/usage",
    "day",
    "Your GPU-hours (by day, GPU type or user), queue waits and how reservations ended.\n"
    "Days are UTC days; times you give without a zone are local.",
)


@click.group()
def admin() -> None:
    """Operators only (a session of an admin role): everyone's usage and reservations."""


admin.add_command(
    _report_command(
        "usage",
        "/v1/admin/usage",
        "user",
        "Everyone's GPU-hours, queue waits, endings and the fleet's utilisation.",
    )
)


@admin.command("list")
@click.pass_obj
def admin_list(obj: Context) -> None:
    """Every live reservation, everyone's, oldest first."""
    rows = obj.client().request("GET", "/v1/admin/reservations")["reservations"]
    obj.emit(rows, usage_render.live_reservations_table)


@admin.command("cancel")
@click.argument("reservation_id")
@click.option("--reason", required=True, help="recorded in the reservation's status history")
@click.pass_obj
def admin_cancel(obj: Context, reservation_id: str, reason: str) -> None:
    """Cancel anyone's reservation (full id or 8-character prefix), with a reason."""
    if not reason.strip():
        raise click.BadParameter("give a reason", param_hint="--reason")
    cancelled = obj.client().request(
        "POST", f"/v1/admin/reservations/{quote(reservation_id, safe='')}/cancel",
        {"reason": reason.strip()},
    )  # fmt: skip
    obj.emit(
        cancelled,
        lambda r: click.echo(f"Cancel requested for {r['reservation_id'][:8]} ({r['user_id']})"),
    )


@admin.command("events")
@click.argument("reservation_id")
@click.pass_obj
def admin_events(obj: Context, reservation_id: str) -> None:
    """Anyone's reservation's timeline (full id or 8-character prefix), oldest first: as
    `gpu-dev events` shows the owner (grant, scheduling, image pull, disk, readiness, the
    log tail of a failed start, OOM kills, restarts, warnings, extensions, the ending)."""
    rows = timeline.events(obj.client(), reservation_id, timeline.OPERATOR)
    obj.emit(rows, timeline.events_table)


@admin.command("logs")
@click.argument("reservation_id")
@click.option("--node", type=click.IntRange(min=0), help="only this node's pod (0 is the first)")
@click.option("--since", help="from this long ago (30s, 10m, 2h, 1d) or this ISO 8601 time")
@click.pass_obj
def admin_logs(obj: Context, reservation_id: str, node: int | None, since: str | None) -> None:
    """What anyone's reservation's pods printed (full id or 8-character prefix), oldest
    first, each line with its node: as `gpu-dev logs` shows the owner."""
    from gpudev_cli.commands.logs import operator_lines

    operator_lines(obj, reservation_id, node, since)


@admin.command("dlq")
@click.pass_obj
def admin_dlq(obj: Context) -> None:
    """The jobs dead-letter queue: its depth and up to 10 of its messages (left in place)."""
    obj.emit(obj.client().request("GET", "/v1/admin/dlq"), usage_render.dead_letters_table)
