"""The API under concurrent load: 20 signed clients against the local gateway for 30 s on a
realistic mix (list, show, reserve without waiting, cancel, availability).

The local cloud runs in this process on its own embedded PostgreSQL, as the soak's does
(the reservations submitted go on through the queue, Step Functions and the allocator in
the background, as they would in AWS). With `--api-processes N` the API function runs in up
to N execution environments of its own, OS processes serving one request at a time, as
Lambda runs it (localcloud/processes.py); without, in this process, as the test suite runs
it. The clients run in processes of their own (`--client-processes`, 2 by default), each
client a thread with the CLI's own SigV4 client (tests/support/api.py) as alice or bob, so
their signing does not share an interpreter with the gateway. Printed per route: requests,
p50/p95/p99 as the client saw them, the gateway's p50 and p99 (from its verifying the
signature to its answer: the invocation and any wait for a free API process), the handler's
own p50 and p99, SQL statements per request (counted on the thread, or in the process, that
ran the invocation) and errors (any answer other than the route's success status, or no
answer).

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
starts are bench/cold_start.py's.

Run: `.venv/bin/python bench/api_load.py [--seconds 30] [--clients 20] [--api-processes N]
[--rate R]` (part of `make bench`). The load average (`uptime`) is printed with each run:
other sessions share the machine's two cores.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import json
import os
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from localcloud.statements import COUNT_STATEMENTS_VARIABLE, StatementCounter  # noqa: E402
from tests.support.api import ApiClient  # noqa: E402

MIX = {"list": 30, "show": 30, "availability": 20, "reserve": 10, "cancel": 10}
WRITES = {"reserve", "cancel"}
GOAL_MS = {"read": 50.0, "write": 100.0}  # p99, on the 2-core machine
PROFILES = ("alice", "bob")


# -- the clients' process ------------------------------------------------------------------


class Client:
    """One engineer's CLI calling in a loop, as one profile; it cancels only what it made."""

    def __init__(self, stack: dict[str, Any], profile: str, seed: int):
        self.api = ApiClient.for_cloud_description(stack)
        self.profile = profile
        self.rng = random.Random(seed)
        self.mine: list[str] = []
        self.samples: list[tuple[str, float, int]] = []  # route, seconds, status (0: none)
        self.failures: dict[str, str] = {}  # the first of each kind: route and status -> why

    def _reserve(self) -> tuple[str, int, Any]:
        body = {
            "gpu_type": "t4",
            "gpu_count": 1,
            "hours": 1,
            "github_user": "octocat",
            "client_request_id": uuid.uuid4().hex,
        }
        reply = self.api.call("POST", "/v1/reservations", self.profile, body)
        if reply.status == 202:
            self.mine.append(reply.body["reservation_id"])
        return "reserve", 202, reply

    def _call(self, route: str) -> tuple[str, int, Any]:
        if route in ("show", "cancel") and not self.mine:
            return self._reserve()
        if route == "reserve":
            return self._reserve()
        if route == "list":
            return route, 200, self.api.call("GET", "/v1/reservations?limit=50", self.profile)
        if route == "availability":
            return route, 200, self.api.call("GET", "/v1/gpu/availability", self.profile)
        if route == "show":
            rid = self.rng.choice(self.mine)
            return route, 200, self.api.call("GET", f"/v1/reservations/{rid}", self.profile)
        rid = self.mine.pop(self.rng.randrange(len(self.mine)))
        return route, 202, self.api.call("POST", f"/v1/reservations/{rid}/cancel", self.profile)

    def run(
        self, warmed: threading.Barrier, seconds: float, mix: dict[str, int], rate: float
    ) -> None:
        """Closed loop (`rate` 0): the next request as soon as the last is answered. Open loop:
        `rate` requests a second at fixed times from a random phase; latency from when due."""
        self._reserve()  # warm-up: not measured
        warmed.wait()
        began = time.perf_counter()
        until = began + seconds
        interval = 1 / rate if rate else 0.0
        due = began + self.rng.uniform(0, interval)
        routes, weights = list(mix), list(mix.values())
        while (due if rate else time.perf_counter()) < until:
            route = self.rng.choices(routes, weights)[0]
            if rate:
                time.sleep(max(0.0, due - time.perf_counter()))
                start, due = due, due + interval
            else:
                start = time.perf_counter()
            try:
                route, expected, reply = self._call(route)
                status = reply.status
                ok = status == expected
                if not ok:
                    self.failures.setdefault(f"{route} {status}", str(reply.body)[:200])
            except Exception as error:  # no answer: counted as an error
                status, ok = 0, False
                self.failures.setdefault(f"{route} no answer", repr(error)[:200])
            self.samples.append((route, time.perf_counter() - start, status if ok else -status))


def run_clients(
    stack_file: Path, clients: range, seconds: float, reads_only: bool, rate: float
) -> None:
    """Clients number `clients` of the run, as threads of this process; the figures as JSON."""
    mix = {route: weight for route, weight in MIX.items() if route not in WRITES or not reads_only}
    stack = json.loads(stack_file.read_text())
    members = [Client(stack, PROFILES[i % 2], seed=i) for i in clients]
    measured_from: list[float] = []
    warmed = threading.Barrier(len(members), action=lambda: measured_from.append(time.time()))
    threads = [threading.Thread(target=c.run, args=(warmed, seconds, mix, rate)) for c in members]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    samples = [s for c in members for s in c.samples]
    failures = {k: v for c in members for k, v in c.failures.items()}
    json.dump(
        {
            "measured_from": measured_from[0],
            "measured_until": time.time(),
            "samples": samples,
            "failures": failures,
        },
        sys.stdout,
    )


# -- the cloud's process -------------------------------------------------------------------


def route_of(event: dict[str, Any]) -> str:
    method, path = event["httpMethod"], event["path"].rstrip("/")
    if path == "/v1/gpu/availability":
        return "availability"
    if path == "/v1/reservations":
        return "reserve" if method == "POST" else "list"
    if path.endswith("/cancel"):
        return "cancel"
    return "show" if method == "GET" else f"{method} {path}"


Served = dict[str, list[tuple[float, float, int]]]  # route: (began at, seconds, statements)


def instrument(cloud: Any, counter: StatementCounter, profiles: list[Any] | None) -> Served:
    """Per route, each API invocation's start time, handler seconds and SQL statements; with
    `profiles`, each invocation's cProfile (a profiler sees only its own thread; in-process
    API only). With API processes, each process measures and counts its own."""
    served: Served = defaultdict(list)
    api_name = cloud.deployment.api.function
    invoker = cloud.api_processes or cloud.lambdas
    invoke = invoker.invoke

    def measured(name: str, event: Any) -> Any:
        if name != api_name:
            return invoke(name, event)
        before, began, start = counter.count, time.time(), time.perf_counter()
        profile = cProfile.Profile() if profiles is not None else None
        invocation = None
        try:
            if profile is None:
                invocation = invoke(name, event)
            else:
                invocation = profile.runcall(invoke, name, event)
            return invocation
        finally:
            seconds = time.perf_counter() - start
            statements = counter.count - before
            if invocation is not None and invocation.pid is not None:
                seconds = invocation.handler_seconds or 0.0
                statements = invocation.statements or 0
            if profile is not None and profiles is not None:
                profiles.append(profile)
            served[route_of(event)].append((began, seconds, statements))

    invoker.invoke = measured
    return served


def instrument_gateway(cloud: Any) -> Served:
    """Per route, each request's start and seconds in the gateway: its signature check, the
    event, the invocation (with any wait for a free API process) and the answer's headers;
    not reading the request or writing the answer."""
    at_gateway: Served = defaultdict(list)
    gateway = cloud.gateway
    handle = gateway.handle

    def timed(method: str, raw_path: str, *rest: Any) -> Any:
        began, start = time.time(), time.perf_counter()
        try:
            return handle(method, raw_path, *rest)
        finally:
            event = {"httpMethod": method, "path": raw_path.split("?")[0]}
            at_gateway[route_of(event)].append((began, time.perf_counter() - start, 0))

    gateway.handle = timed
    return at_gateway


class CollectorPauses:
    """The cloud process's garbage collector: each full pass (generation 2) stops every
    thread of the process, the gateway's too, for as long as it takes."""

    def __init__(self) -> None:
        self.passes: list[tuple[float, float]] = []  # began at, seconds
        self._started = 0.0
        gc.callbacks.append(self._on_collection)

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.passes.append((time.time(), time.perf_counter() - self._started))

    def between(self, began: float, ended: float) -> list[float]:
        return [seconds for at, seconds in self.passes if began <= at <= ended]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def merged(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The client processes' figures as one run, from the first to finish its warm-up."""
    began = min(r["measured_from"] for r in results)
    return {
        "measured_from": began,
        "seconds": max(r["measured_until"] for r in results) - began,
        "samples": [s for r in results for s in r["samples"]],
        "failures": {k: v for r in results for k, v in r["failures"].items()},
    }


def load_average() -> str:
    return "load average " + ", ".join(f"{load:.2f}" for load in os.getloadavg())


def report(
    result: dict[str, Any],
    served: Served,
    at_gateway: Served,
    collector: CollectorPauses,
    clients: int,
    rate: float,
) -> bool:
    """One run's table; whether the goals were met on it."""
    samples = result["samples"]
    began, ended = result["measured_from"], result["measured_from"] + result["seconds"]

    def in_window(rows: Served) -> dict[str, list[tuple[float, int]]]:
        return {
            route: [(s, n) for at, s, n in entries if began <= at <= ended]
            for route, entries in rows.items()
        }

    handled, gateway = in_window(served), in_window(at_gateway)
    by_route: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for route, seconds, status in samples:
        by_route[route].append((seconds, status))
    total = len(samples)
    errors = sum(1 for _, _, status in samples if status <= 0)
    throughput = total / result["seconds"]
    mean_ms = statistics.mean(s for _, s, _ in samples) * 1000 if samples else 0.0
    if rate:
        print(
            f"open loop: {clients} clients each sending {rate:g} requests/s at fixed times "
            f"({clients * rate:g} requests/s offered); latency counted from when each was due"
        )
    else:
        print(f"closed loop: {clients} clients, each sending when its last request is answered")
    print(
        f"  {total:,} requests in {result['seconds']:.1f} s = {throughput:.0f} requests/s,"
        f" {errors} errors, mean latency {mean_ms:.1f} ms ({load_average()})"
    )
    if not rate and throughput:
        print(
            f"  Little's law: {clients} clients / {throughput:.0f} requests/s ="
            f" {clients / throughput * 1000:.1f} ms mean latency, whatever the server does;"
            f" a mean of 50 ms with {clients} closed-loop clients needs"
            f" {clients / 0.05:.0f} requests/s (and p99 ≤ 50 ms more than that)"
        )
    print(
        f"  {'route':13} {'n':>5}  {'p50':>6} {'p95':>6} {'p99':>6} ms client"
        f"  {'p50':>5} {'p99':>6} ms gateway  {'p50':>5} {'p99':>6} ms handler"
        f"  SQL/request  errors  goal (p99)"
    )
    met = errors == 0
    for route in MIX:
        rows = by_route.get(route, [])
        if not rows:
            continue
        ms = [s * 1000 for s, _ in rows]
        handler = [s * 1000 for s, _ in handled.get(route, [])] or [0.0]
        gateway_ms = [s * 1000 for s, _ in gateway.get(route, [])] or [0.0]
        statements = [n for _, n in handled.get(route, [])] or [0]
        goal = GOAL_MS["write" if route in WRITES else "read"]
        p99 = percentile(ms, 0.99)
        met = met and p99 <= goal
        failed = sum(1 for _, status in rows if status <= 0)
        print(
            f"  {route:13} {len(rows):5}  {percentile(ms, 0.5):6.1f} {percentile(ms, 0.95):6.1f}"
            f" {p99:6.1f}     {percentile(gateway_ms, 0.5):5.1f}"
            f" {percentile(gateway_ms, 0.99):6.1f}"
            f"          {percentile(handler, 0.5):5.1f} {percentile(handler, 0.99):6.1f}"
            f"          {statistics.mean(statements):4.1f} (max {max(statements)})  {failed:6}"
            f"  {'≤' if p99 <= goal else '>'} {goal:.0f} ms"
        )
    for kind, why in sorted(result["failures"].items()):
        print(f"  failed: {kind}: {why}")
    pauses = collector.between(began, ended)
    print(
        f"  the API function served {sum(len(rows) for rows in handled.values()):,} invocations;"
        f" the cloud process's collector made {len(pauses)} full passes"
        f" (longest {max(pauses, default=0) * 1000:.0f} ms, {sum(pauses):.1f} s in all)"
    )
    print(f"  goals {'met' if met else 'NOT met'} on this run")
    return met


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
        default=0,
        metavar="N",
        help="the API function in N processes of its own, as Lambda runs it (default 0: in "
        "the cloud's process, as the test suite runs it)",
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
    if args.profile and args.api_processes:
        parser.error("--profile sees the cloud's process only: not with --api-processes")

    from gpudev.db.pool import connection_pool
    from localcloud.options import Ports
    from localcloud.postgres import free_port
    from localcloud.stack import LocalCloud, Options

    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"  # no EMF on stdout
    os.environ[COUNT_STATEMENTS_VARIABLE] = "1"  # API processes count their own statements
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
        ports=Ports(api=free_port(), aws=free_port(), kubernetes=free_port()),
        tick_seconds=None,  # the schedules' real periods, as in AWS (minutes)
        kubelet_delay_seconds=0.2,
        max_live_reservations_per_user=100_000,
        max_gpus_per_user=1_000_000,
        api_processes=args.api_processes,
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
                runs.append((rate, run_client_processes(cloud.write_description(), args, rate)))
                if any(r.returncode for r in runs[-1][1]):
                    break
            pool = connection_pool().get_stats()
            where = (
                f"{args.api_processes} processes of its own ({cloud.api_processes.started} started)"
                if cloud.api_processes
                else "in the cloud's process"
            )
        finally:
            cloud.stop()
    failed = [r for _, results in runs for r in results if r.returncode]
    if failed:
        print(f"a clients' process failed:\n{failed[0].stderr}", file=figures)
        return 1
    with contextlib.redirect_stdout(figures):
        print(f"API function: {where}")
        for rate, results in runs:
            result = merged([json.loads(r.stdout) for r in results])
            report(result, served, at_gateway, collector, args.clients, rate)
        print(
            f"the cloud process's database pool: {pool.get('requests_num', 0)} checkouts,"
            f" {pool.get('requests_queued', 0)} waited ({pool.get('requests_wait_ms', 0)} ms"
            f" in all), {pool.get('connections_num', 0)} connections opened"
        )
        if profiles:
            stats = pstats.Stats(profiles[0], stream=figures)
            for profile in profiles[1:]:
                stats.add(profile)
            stats.sort_stats("cumulative").print_stats(40)
    return 0


if __name__ == "__main__":
    sys.exit(main())
