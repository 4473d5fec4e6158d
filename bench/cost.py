"""Cost at scale (issue #30 item 8): what the control plane costs per reservation-hour and
per month, from a run of reservations on the local cloud and the synthesized template.

A LocalCloud in this process with a compressed clock (1 h = 36 s) and free capacity runs
`--reservations` T4 reservations, each with a named disk of its own, half of them 1 clock
hour long and half 3, to their expiry. Every billable operation is counted per reservation
and split into what any reservation costs and what each hour adds (a straight line through
the two lengths):

- Step Functions state transitions: the `...StateEntered` events of its execution history,
  plus every retried attempt (a retry is a transition too);
- Lambda invocations and GB-seconds: each invocation of the reservation's functions (the
  API, the jobs consumer, the reservation tasks; payloads name the reservation) timed here,
  at the memory the CDK declaration gives the function (`cdk_app/declaration.py`);
- SQS requests: per job, its SendMessage, and its share of the batch's ReceiveMessage and
  DeleteMessageBatch;
- API Gateway requests: what this bench sends, as the CLI would (a create and a status read
  every `FOLLOW_POLL_SECONDS` until active);
- CloudWatch Logs: the bytes each invocation logs (captured from the process's output and
  matched by request id), Lambda's own START/END/REPORT lines, and the state machine's log
  (level ALL: one record per history event, its JSON without the execution data);
- X-Ray: one trace per invocation (every function traces actively);
- EBS: the disk's gp3 volume from `Take the disk` to `Free the disk`, and the snapshots
  made (their storage is priced per GB the user changed, which the local cloud cannot
  know).

The fixed monthly resources come from the template (`cdk.out/GpuDev.template.json`, made
with a test CA bundle when absent): the database's minimum capacity, NAT gateways, public
addresses, interface endpoints, keys, alarms, dashboards, secrets, an EKS cluster if the
stack has one, and the schedules (their runs timed here). Counts are deterministic; Lambda
durations are wall time on this machine, so an upper bound when it is loaded.

What is read off the run is in `bench/support/cost_counts.py`, the prices and the template
reading in `bench/support/cost_model.py`.

Run: `.venv/bin/python bench/cost.py [--reservations 20]` (part of `make bench`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.support.cost_counts import (  # noqa: E402
    Meter,
    captured_output,
    history,
    log_bytes_by_request,
    state_log_bytes,
    transitions,
    volume_hours,
    wait_until_finished,
)
from bench.support.cost_model import (  # noqa: E402
    HOURS_PER_MONTH,
    Run,
    Usage,
    fixed_monthly_cost,
    linear_fit,
    read_fixed_resources,
    usage_cost,
)
from cdk_app.declaration import (  # noqa: E402
    API,
    DEPLOYMENT,
    DISK_PURGE,
    DISK_RECONCILER,
    EBS_OWNER_TAG,
    JOBS_CONSUMER,
    NOTIFIER,
    RESERVATION_TASKS,
    SWEEPER,
)
from localcloud.stack import LocalCloud, Options  # noqa: E402
from tests.support.api import ApiClient  # noqa: E402

SECONDS_PER_HOUR = 36.0
SHORT_HOURS, LONG_HOURS = 1.0, 3.0
TYPICAL_HOURS = 8.0  # a working day, for the "per reservation" line
FOLLOW_POLL_SECONDS = 2.0
# Lambda writes START, END and REPORT lines for every invocation (about this many bytes).
PLATFORM_LOG_BYTES = 330
# The functions whose invocations name the reservation they work for (the notifier: its bus
# event's detail), counted as the reservation's; the others are the schedules'.
PER_RESERVATION = {API.name, JOBS_CONSUMER.name, RESERVATION_TASKS.name, NOTIFIER.name}
MEMORY_MB = {spec.name: spec.memory_mb for spec in DEPLOYMENT.functions}
# Their every run statistic is a metric (`add_run_metrics`, the purge's own loop).
STATISTICS_AS_METRICS = {f.deployed_name for f in (SWEEPER, DISK_RECONCILER, DISK_PURGE)}
GPU_TYPES_SQL = (Path(__file__).resolve().parent / "sql" / "cost" / "gpu_types.sql").read_text()
BUS_EVENTS_SQL = (Path(__file__).resolve().parent / "sql" / "cost" / "bus_events.sql").read_text()
# The event relay's run metrics (`add_run_metrics`): RunSkipped, events_published and
# events_refused.
EVENT_RELAY_METRICS = 3


class CostRun:
    def __init__(self, cloud: LocalCloud, reservations: int) -> None:
        self.cloud = cloud
        self.api = ApiClient.for_cloud(cloud)
        self.meter = Meter(cloud)
        self.count = reservations
        self.api_requests: Counter[str] = Counter()

    def call(self, method: str, path: str, body: Any = None) -> Any:
        return self.api.call(method, path, body=body)

    def make_disks(self) -> None:
        """A disk per reservation, made before the run: a user makes a disk once and
        reserves with it many times, so its making is no reservation's cost."""
        for n in range(self.count):
            reply = self.call("POST", "/v1/disks", {"disk_name": f"cost-{n}"})
            assert reply.status in (200, 201, 202), reply.body
        deadline = time.monotonic() + 300
        for n in range(self.count):
            while self.call("GET", f"/v1/disks/cost-{n}").body.get("operation_status") in (
                "requested",
                "running",
            ):
                assert time.monotonic() < deadline, "disks not made in time"
                time.sleep(0.5)

    def run(self) -> dict[str, float]:
        """Submits every reservation, follows each to active as the CLI would, then waits
        until all ended. Returns each reservation's hours by id."""
        self.make_disks()
        hours: dict[str, float] = {}
        for n in range(self.count):
            length = SHORT_HOURS if n % 2 == 0 else LONG_HOURS
            body = {
                "gpu_type": "t4",
                "gpu_count": 1,
                "hours": length,
                "github_user": "alice",
                "disk_name": f"cost-{n}",
                "client_request_id": f"cost-{n}",
            }
            reply = self.call("POST", "/v1/reservations", body)
            assert reply.status == 202, reply.body
            rid = reply.body["reservation_id"]
            hours[rid] = length
            self.api_requests[rid] += 1
        following = set(hours)
        deadline = time.monotonic() + 600 + LONG_HOURS * SECONDS_PER_HOUR * self.count
        while time.monotonic() < deadline:
            for rid in sorted(following):
                self.api_requests[rid] += 1
                status = self.call("GET", f"/v1/reservations/{rid}").body["status"]
                if status != "queued" and status != "pending" and status != "preparing":
                    following.discard(rid)
            if not following and all(
                self.call("GET", f"/v1/reservations/{rid}").body["status"]
                in ("expired", "cancelled", "failed")
                for rid in hours
            ):
                wait_until_finished(self.cloud, list(hours), timeout=300)
                return hours
            time.sleep(FOLLOW_POLL_SECONDS)
        raise AssertionError("reservations did not end in time")

    def usage(self, hours: dict[str, float], logged: dict[str, int]) -> dict[str, Usage]:
        """Each reservation's operations. The API's requests name no reservation in every
        event (a create), so each costs the API's mean invocation."""
        per: dict[str, Usage] = {rid: Usage() for rid in hours}
        api_calls = [(s, logged.get(r, 0)) for n, _, s, r in self.meter.calls if n == API.name]
        api_seconds = statistics.mean(s for s, _ in api_calls)
        api_log_bytes = statistics.mean(b for _, b in api_calls) + PLATFORM_LOG_BYTES
        for rid in hours:
            requests = self.api_requests[rid]
            per[rid] += Usage(
                api_requests=requests,
                lambda_invocations=requests,
                lambda_gb_seconds=requests * api_seconds * MEMORY_MB[API.name] / 1024,
                log_bytes=requests * api_log_bytes,
                xray_traces=requests,
            )
        for name, ids, seconds, request_id in self.meter.calls:
            mine = [rid for rid in ids if rid in per]
            if name not in (JOBS_CONSUMER.name, RESERVATION_TASKS.name, NOTIFIER.name) or not mine:
                continue
            share = 1 / len(ids)
            for rid in mine:
                per[rid] += Usage(
                    lambda_invocations=share,
                    lambda_gb_seconds=share * seconds * MEMORY_MB[name] / 1024,
                    log_bytes=share * (logged.get(request_id, 0) + PLATFORM_LOG_BYTES),
                    xray_traces=share,
                    # a batch: one ReceiveMessage and one DeleteMessageBatch, shared
                    sqs_requests=2 * share if name == JOBS_CONSUMER.name else 0.0,
                )
        from gpudev.disks.volumes import DEFAULT_SIZE_GB

        bus_events = self.bus_events()
        for rid in hours:
            events = history(self.cloud, rid)
            per[rid] += Usage(
                state_transitions=transitions(events),
                log_bytes=state_log_bytes(events),
                sqs_requests=self.meter.records[rid],  # each job's SendMessage
                volume_gb_hours=volume_hours(events, SECONDS_PER_HOUR) * DEFAULT_SIZE_GB,
                bus_events=bus_events.get(rid, 0),
            )
        return per

    def bus_events(self) -> dict[str, int]:
        """The events each reservation put on the bus (one PutEvents entry each)."""
        import psycopg

        with psycopg.connect(self.cloud.database_url) as conn:
            rows = conn.execute(BUS_EVENTS_SQL).fetchall()
        return {str(rid): int(count) for rid, count in rows}

    def snapshots(self) -> int:
        assert self.cloud.aws is not None
        ec2 = self.cloud.aws.client("ec2")
        ours = [{"Name": "tag-key", "Values": [EBS_OWNER_TAG]}]
        return len(ec2.describe_snapshots(OwnerIds=["self"], Filters=ours)["Snapshots"])

    def scheduled_runs(self, logged: dict[str, int]) -> dict[str, Run]:
        """Each scheduled function's mean run, by its name in the declaration."""
        runs: dict[str, list[tuple[float, int]]] = defaultdict(list)
        for name, _ids, seconds, request_id in self.meter.calls:
            if name not in PER_RESERVATION:
                runs[name].append((seconds, logged.get(request_id, 0) + PLATFORM_LOG_BYTES))
        return {
            name: Run(statistics.mean(s for s, _ in values), statistics.mean(b for _, b in values))
            for name, values in runs.items()
        }


def read_template() -> dict[str, Any]:
    """cdk.out's template, or one synthesized now with the test CA bundle (offline)."""
    existing = ROOT / "cdk.out" / "GpuDev.template.json"
    if existing.exists():
        return dict(json.loads(existing.read_text()))
    from cdk_app.app import build_app
    from tests.support.certificates import synth_context

    node_bin = ROOT / "node_modules" / ".bin"  # the project's node, as `make synth` uses
    os.environ["PATH"] = f"{node_bin}{os.pathsep}{os.environ['PATH']}"

    with tempfile.TemporaryDirectory(prefix="bench-cost-synth-", dir=ROOT / ".local") as tmp:
        out = Path(tmp)
        app, _ = build_app(outdir=str(out / "cdk.out"), context=synth_context(out))
        app.synth()
        return dict(json.loads((out / "cdk.out" / "GpuDev.template.json").read_text()))


def mean_usage(per: dict[str, Usage], hours: dict[str, float], length: float) -> Usage:
    chosen = [usage for rid, usage in per.items() if hours[rid] == length]
    total = Usage()
    for usage in chosen:
        total += usage
    return total.scaled(1 / len(chosen))


def custom_metrics(statistics_of: dict[str, set[str]], gpu_types: int) -> int:
    """The distinct metrics the functions emit (by `service`, the deployed name): every
    statistic the sweeper, the disk reconciler and the purge log, with RunSkipped; the
    sweeper's SweeperRepairs; the allocator's Granted, Queued and QueueWaitSeconds; the
    availability updater's KubernetesReachable, PodHealthEndings and IdleEndings, and
    GpusAvailable, GpusInUse and GpusUsed per GPU type; the event relay's run metrics."""
    reconcilers = sum(
        len(names) + 1 for name, names in statistics_of.items() if name in STATISTICS_AS_METRICS
    )
    return reconcilers + 1 + 3 + 3 + 3 * gpu_types + EVENT_RELAY_METRICS


def print_table(base: Usage, hourly: Usage, fixed: dict[str, float], snapshots: float) -> None:
    base_cost, hourly_cost = usage_cost(base), usage_cost(hourly)
    print(f"{'per reservation':36} {'once':>11} {'per hour':>11}   operations once / per hour")
    for line in base_cost:
        print(f"  {line:34} ${base_cost[line]:10.6f} ${hourly_cost[line]:10.6f}")
    once, per_hour = sum(base_cost.values()), sum(hourly_cost.values())
    print(f"  {'total':34} ${once:10.6f} ${per_hour:10.6f}")
    typical = (once + per_hour * TYPICAL_HOURS) / TYPICAL_HOURS
    print(f"$ per reservation-hour (an {TYPICAL_HOURS:g}-hour reservation): ${typical:.5f}")
    print(f"snapshots made per reservation: {snapshots:g}; storage $0.05 a GB changed a month")
    print()
    print("operations")
    for key, value in vars(base).items():
        print(f"  {key:34} {value:12.2f} once  {getattr(hourly, key):10.2f} per hour")
    print()
    print(f"{'fixed, per month':36} {'$':>11}")
    for line, dollars in sorted(fixed.items(), key=lambda item: -item[1]):
        print(f"  {line:34} ${dollars:10.2f}")
    print(f"  {'total':34} ${sum(fixed.values()):10.2f}")
    print(f"  (a year: ${sum(fixed.values()) * 12:,.0f}; {HOURS_PER_MONTH:g} hours a month)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reservations", type=int, default=20)
    args = parser.parse_args()
    (ROOT / ".local").mkdir(exist_ok=True)
    template = read_template()
    fixed = read_fixed_resources(template)
    options = Options(
        tick_seconds=5.0,  # every schedule runs and is timed
        kubelet_delay_seconds=0.5,
        probe_seconds=0.5,
        seconds_per_hour=SECONDS_PER_HOUR,
        ready_timeout_seconds=30.0,
        ready_poll_seconds=1,
        termination_seconds_scale=0.1,
        max_live_reservations_per_user=10_000,
        max_gpus_per_user=100_000,
        api_requests_per_minute=1_000_000,
        api_request_burst=1_000_000,
    )
    with tempfile.TemporaryDirectory(prefix="bench-cost-", dir=ROOT / ".local") as tmp:
        Path(tmp).chmod(0o755)
        logs = Path(tmp) / "output.log"
        with captured_output(logs):
            cloud = LocalCloud(Path(tmp), options).start()
            try:
                measured = CostRun(cloud, args.reservations)
                hours = measured.run()
                logged, statistics_of = log_bytes_by_request(logs)
                per = measured.usage(hours, logged)
                snapshots = measured.snapshots() / len(hours)
                scheduled = measured.scheduled_runs(logged)
                types = _gpu_types(cloud)
            finally:
                cloud.stop()
    base, hourly = linear_fit(
        mean_usage(per, hours, SHORT_HOURS),
        SHORT_HOURS,
        mean_usage(per, hours, LONG_HOURS),
        LONG_HOURS,
    )
    by_logical_id = {
        schedule.function: run
        for schedule in fixed.schedules
        for name, run in scheduled.items()
        if schedule.function.startswith(logical_id_prefix(name))
    }
    monthly = fixed_monthly_cost(fixed, by_logical_id, custom_metrics(statistics_of, types))
    print(
        f"{len(hours)} reservations ({SHORT_HOURS:g} h and {LONG_HOURS:g} h, a disk each) on the "
        f"local cloud; prices us-east-2 (bench/support/cost_model.py)"
    )
    print_table(base, hourly, monthly, snapshots)
    return 0


def logical_id_prefix(function: str) -> str:
    """CDK's logical id of a declared function starts so (cdk_app/function.py)."""
    return f"{function}Function"


def _gpu_types(cloud: LocalCloud) -> int:
    import psycopg

    with psycopg.connect(cloud.database_url) as conn:
        row = conn.execute(GPU_TYPES_SQL).fetchone()
    return int(row[0]) if row else 0


if __name__ == "__main__":
    sys.exit(main())
