"""bench/api_load.py's figures: the client processes' results merged into one run, and one
run's table per route beside the goals."""

from __future__ import annotations

import os
import statistics
from collections import defaultdict
from typing import Any

from bench.support.api_load_clients import MIX, WRITES
from bench.support.api_load_cloud import CollectorPauses, Served

GOAL_MS = {"read": 50.0, "write": 100.0}  # p99, on the 2-core machine


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
