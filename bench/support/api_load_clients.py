"""bench/api_load.py's clients' process: each client a thread with the CLI's own SigV4 client
as alice or bob, calling the realistic mix closed loop or open loop; the figures as JSON."""

from __future__ import annotations

import json
import random
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from tests.support.api import ApiClient

MIX = {"list": 30, "show": 30, "availability": 20, "reserve": 10, "cancel": 10}
WRITES = {"reserve", "cancel"}
PROFILES = ("alice", "bob")


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
