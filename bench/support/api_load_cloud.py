"""bench/api_load.py's measurements in the cloud's process: per route, each API invocation's
handler time and SQL statements, each request's time in the gateway, and the collector's
full passes."""

from __future__ import annotations

import cProfile
import gc
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, LiteralString, cast

import psycopg

from localcloud.statements import StatementCounter


def route_of(event: dict[str, Any]) -> str:
    method, path = event["httpMethod"], event["path"].rstrip("/")
    if path == "/v1/gpu/availability":
        return "availability"
    if path == "/v1/reservations":
        return "reserve" if method == "POST" else "list"
    if path.endswith("/cancel"):
        return "cancel"
    return "show" if method == "GET" else f"{method} {path}"


IN_MOTION = cast(
    LiteralString, (Path(__file__).parent.parent / "sql" / "api_load" / "in_motion.sql").read_text()
)
SETTLE_SECONDS = 300.0
SETTLED_FOR_SECONDS = 2.0

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


def queue_depths(cloud: Any) -> dict[str, tuple[int, ...]]:
    """Each queue's and dead-letter queue's messages: (visible, in flight, delayed)."""
    sqs = cloud.aws.client("sqs")
    names = ("Messages", "MessagesNotVisible", "MessagesDelayed")
    depths = {}
    for name, url in {
        **cloud.resources.queue_urls,
        **{f"{n}-dlq": u for n, u in cloud.resources.dead_letter_queue_urls.items()},
    }.items():
        attributes = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=[f"ApproximateNumberOf{n}" for n in names]
        )["Attributes"]
        depths[name] = tuple(int(attributes[f"ApproximateNumberOf{n}"]) for n in names)
    return depths


def settle(cloud: Any) -> tuple[float, int, int]:
    """Wait until the work a run left behind is done: no job in the queue (visible or in
    flight), no unsent job in the outbox, no reservation pending or preparing, no cancel not
    yet torn down, for SETTLED_FOR_SECONDS in a row, so the next run is measured beside its
    own lifecycles only, not the last run's backlog. Gives up after SETTLE_SECONDS. (seconds
    it took, jobs queued and work left in the database then: both 0 when settled)."""
    began = time.monotonic()
    quiet_since: float | None = None
    with psycopg.connect(cloud.database_url, autocommit=True) as conn:
        while True:
            jobs = sum(
                visible + in_flight
                for name, (visible, in_flight, _) in queue_depths(cloud).items()
                if name in cloud.resources.queue_urls
            )
            row = conn.execute(IN_MOTION).fetchone()
            left = int(row[0]) if row else 0
            now = time.monotonic()
            if jobs or left:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            if quiet_since is not None and now - quiet_since >= SETTLED_FOR_SECONDS:
                return now - began, 0, 0
            if now - began > SETTLE_SECONDS:
                return now - began, jobs, left
            time.sleep(0.5)
