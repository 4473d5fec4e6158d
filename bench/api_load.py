"""The API under concurrent load: 20 signed clients against the local gateway for 30 s on a
realistic mix (list, show, reserve without waiting, cancel, availability).

The local cloud runs in this process on its own embedded PostgreSQL, as the soak's does (the
reservations submitted go on through the queue, Step Functions and the allocator in the
background, as they would in AWS). The API function runs in up to `--api-processes N` execution
environments of its own (one per client by default, as Lambda gives each concurrent caller
one), OS processes serving one request at a time, as Lambda runs it (localcloud/processes.py);
with `--api-processes 0`, in this process, as the test suite runs it (where it shares the
cloud's interpreter and database pool with the lifecycles). Every other function (the queue's
consumer, the lifecycle's tasks, the allocator, the schedules') runs in up to
`--function-processes M` processes of its own each (5 by default; 0: in this process), so
this process keeps only what AWS and Kubernetes run: moto, the stand-in, the gateway and the
pollers. The clients run in processes of
their own (`--client-processes`, 2 by default), each client a thread with the CLI's own SigV4
client (tests/support/api.py) as alice or bob, so their signing does not share an interpreter
with the gateway. Printed per route: requests, p50/p95/p99 as the client saw them, the
gateway's p50 and p99 (from its verifying the signature to its answer: the invocation and any
wait for a free API process), the handler's own p50 and p99, SQL statements per request
(counted on the thread, or in the process, that ran the invocation) and errors (any answer
other than the route's success status, or no answer).

Two ways to load it, each printed under its own name, never one as the other:

- **closed loop** (always): each client sends its next request as soon as the last is
  answered. The clients then set the pace, and Little's law ties the figures together: mean
  latency = clients / throughput, so with 20 clients on 2 shared cores the mean cannot be
  below 20 / (the requests/s the machine can serve); that bound is printed beside them.
- **open loop** (`--rate R`, 1 by default, 0 for none): each client sends R requests a second
  at fixed times (1/s is the CLI's fastest polling, `gpu-dev reserve` waiting), whatever the
  answers; a request due while the previous one is unanswered goes when it is answered, and
  its latency counts from when it was due, so a slow answer is not hidden by sending less.

The API's processes are all started and warm before the clients begin (provisioned
concurrency), and the first request of each client is a warm-up outside the figures: cold
starts are bench/cold_start.py's. Before the open loop, the run waits until the closed
loop's work is done (for 2 s: no job queued, in flight or unsent, no reservation pending or
preparing, no cancel still to tear down: `settle`), so the open loop is measured beside its
own lifecycles, not the backlog of the closed loop's ~400 reservations.

Run: `.venv/bin/python bench/api_load.py [--seconds 30] [--clients 20] [--api-processes N]
[--rate R]` (part of `make bench`). The load average (`uptime`) is printed with each run:
other sessions share the machine's two cores.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.support.api_load_clients import run_clients  # noqa: E402
from bench.support.api_load_cloud import (  # noqa: E402
    CollectorPauses,
    instrument,
    instrument_gateway,
    queue_depths,
    settle,
)
from bench.support.api_load_report import merged, report  # noqa: E402
from localcloud.event_sources import CONCURRENT_BATCHES  # noqa: E402
from localcloud.statements import COUNT_STATEMENTS_VARIABLE, StatementCounter  # noqa: E402


def run_client_processes(
    stack_file: Path, args: argparse.Namespace, rate: float
) -> list[subprocess.CompletedProcess[str]]:
    """The clients spread over `args.client_processes` processes, run to the end."""
    shares = [args.clients // args.client_processes] * args.client_processes
    for i in range(args.clients % args.client_processes):
        shares[i] += 1
    firsts = [sum(shares[:i]) for i in range(len(shares))]
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                *("--clients-of", str(stack_file), "--clients", str(share)),
                *("--first-client", str(first), "--seconds", str(args.seconds)),
                *("--rate", str(rate)),
                *(["--reads-only"] if args.reads_only else []),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for share, first in zip(shares, firsts, strict=True)
        if share
    ]
    results = []
    for process in processes:
        out, err = process.communicate()
        results.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--reads-only", action="store_true", help="no reserve or cancel")
    parser.add_argument("--profile", action="store_true", help="print where handlers spend")
    parser.add_argument(
        "--api-processes",
        type=int,
        metavar="N",
        help="the API function in N processes of its own, as Lambda runs it (default: one "
        "per client, as Lambda gives each concurrent caller an environment; 0: in the "
        "cloud's process, as the test suite runs it)",
    )
    parser.add_argument(
        "--function-processes",
        type=int,
        default=CONCURRENT_BATCHES,
        metavar="M",
        help="every other function (the queue's consumer, the lifecycle's tasks, the "
        "schedules') in up to M processes each, as Lambda runs them (default "
        f"{CONCURRENT_BATCHES}, the batches the queue's poller runs at once; 0: in the "
        "cloud's process, as the test suite runs them)",
    )
    parser.add_argument(
        "--client-processes",
        type=int,
        default=2,
        help="the clients' threads spread over this many processes (default 2)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=1.0,
        metavar="R",
        help="after the closed-loop run, an open-loop one: each client sends R requests/s at "
        "fixed times (default 1, the CLI's fastest polling; 0: closed loop only)",
    )
    parser.add_argument("--clients-of", type=Path, help=argparse.SUPPRESS)  # a clients' process
    parser.add_argument("--first-client", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.clients_of:
        numbers = range(args.first_client, args.first_client + args.clients)
        run_clients(args.clients_of, numbers, args.seconds, args.reads_only, args.rate)
        return 0
    if args.api_processes is None:
        args.api_processes = args.clients
    if args.profile and args.api_processes:
        parser.error("--profile sees the cloud's process only: add --api-processes 0")

    from gpudev.db.pool import connection_pool
    from localcloud.stack import LocalCloud, Options

    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"  # no EMF on stdout
    os.environ[COUNT_STATEMENTS_VARIABLE] = "1"  # function processes count their own statements
    # The functions log to stdout and stderr: into a file; the figures go to our stdout.
    figures = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    log_path = ROOT / ".local" / "bench-api-load.log"
    (ROOT / ".local").mkdir(exist_ok=True)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log, sys.stdout.fileno())
    os.dup2(log, sys.stderr.fileno())
    print(f"(the local cloud's logs: {log_path.relative_to(ROOT)})", file=figures)
    options = Options(
        tick_seconds=None,  # the schedules' real periods, as in AWS (minutes)
        kubelet_delay_seconds=0.2,
        max_live_reservations_per_user=100_000,
        max_gpus_per_user=1_000_000,
        api_requests_per_minute=1_000_000,  # the per-principal rate out of the way too
        api_request_burst=1_000_000,
        api_processes=args.api_processes,
        function_processes=args.function_processes,
    )
    counter = StatementCounter()
    (ROOT / ".local").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-api-load-", dir=ROOT / ".local") as tmp:
        Path(tmp).chmod(0o755)
        cloud = LocalCloud(Path(tmp), options).start()
        try:
            profiles: list[Any] | None = [] if args.profile else None
            served = instrument(cloud, counter, profiles)
            at_gateway = instrument_gateway(cloud)
            collector = CollectorPauses()
            if cloud.api_processes:  # their cold starts before the clients, not among them
                began = time.monotonic()
                ready = cloud.api_processes.provision()
                print(
                    f"{ready} API processes ready in {time.monotonic() - began:.1f} s", file=figures
                )
            runs = []
            for rate in [0.0, args.rate] if args.rate else [0.0]:
                if runs:  # the last run's lifecycles done first: each run measures its own
                    waited, jobs, left = settle(cloud)
                    print(
                        f"the closed loop's work done in {waited:.1f} s"
                        if not (jobs or left)
                        else f"NOT settled after {waited:.0f} s: {jobs} jobs queued, {left}"
                        " reservations or unsent jobs in motion",
                        file=figures,
                    )
                runs.append((rate, run_client_processes(cloud.write_description(), args, rate)))
                if any(r.returncode for r in runs[-1][1]):
                    break
            pool = connection_pool().get_stats()
            depths = queue_depths(cloud)
            where = (
                f"{args.api_processes} processes of its own ({cloud.api_processes.started} started)"
                if cloud.api_processes
                else "in the cloud's process"
            )
            others = (
                ", ".join(
                    f"{name} {environments.started}"
                    for name, environments in sorted(cloud.function_processes.of.items())
                    if name != cloud.deployment.api.function and environments.started
                )
                if cloud.function_processes
                else ""
            )
        finally:
            cloud.stop()
    failed = [r for _, results in runs for r in results if r.returncode]
    if failed:
        print(f"a clients' process failed:\n{failed[0].stderr}", file=figures)
        return 1
    with contextlib.redirect_stdout(figures):
        print(f"API function: {where}")
        if others:
            print(
                f"the other functions' processes started (at most"
                f" {args.function_processes} each): {others}"
            )
        for rate, results in runs:
            result = merged([json.loads(r.stdout) for r in results])
            report(result, served, at_gateway, collector, args.clients, rate)
        print(
            f"the cloud process's database pool: {pool.get('requests_num', 0)} checkouts,"
            f" {pool.get('requests_queued', 0)} waited ({pool.get('requests_wait_ms', 0)} ms"
            f" in all), {pool.get('connections_num', 0)} connections opened"
        )
        print(f"messages left in the queues (visible, in flight, delayed): {depths}")
        if profiles:
            stats = pstats.Stats(profiles[0], stream=figures)
            for profile in profiles[1:]:
                stats.add(profile)
            stats.sort_stats("cumulative").print_stats(40)
    return 0


if __name__ == "__main__":
    sys.exit(main())
