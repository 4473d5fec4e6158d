"""The soak (issue #12, "Tests"): many reservations through one local cloud with a
compressed clock (1 h = 36 s), with random cancels and extends and faults at a low rate,
then the invariants (all must be 0) and the throughput the control plane sustained.

The cloud runs in this process on its own embedded PostgreSQL (a temporary directory under
.local, free ports), with the whole deployment, the sweeper's schedule included (every
second). Reservations cover every local GPU type (t4, h100, cpu-x86; single and multinode),
0.1 to 0.2 clock hours each, from alice and bob, and about one in ten a profiling one from
carol (the local cloud's PROFILING_ROLES is her SSO role), with at most `--live` of them
submitted and not ended at a time. Faults (one every `--fault-every` seconds on average): a
Kubernetes 500 on a create, replace, delete or list, the stand-in unreachable for a second
(every request held beyond the client's 2 s timeout), every database connection of the
functions killed.

Invariants: overbooked nodes (sampled every 0.2 s: pods asking more GPUs than a node has);
nodes a profiling reservation shared (sampled so too: a node with a profiling reservation's
pod and another reservation's pod, neither being deleted);
queue-order violations (a reservation granted while an earlier one of the same GPU type and
count, asking for no more time, was waiting in the queue: EASY backfill lets one asking for
less pass, see sql/soak/queue_order.sql); objects left labelled with an ended reservation;
slots held by ended reservations; ended reservations without a reason; reservations not
ended.

With `--outages` (issue #30, "Done when"), two outages are injected mid-run through the
fault tool's mechanism (`CloudFaults`, what `python -m localcloud.faults` drives): the
database refusing every connection for 60 s, then, a minute after it is back, the
Kubernetes API answering 503 for 5 minutes. Their lengths are real seconds, as the tool's
are, so the state machine's retries count real seconds too (`retry_seconds_per_hour`, the
AWS policy: 2 s doubling to 60 s, full jitter, 85 attempts), while reservations, checkpoints
and the rest keep the compressed clock. The run adds failed reservations and lost grants
(granted, never launched, never cancelled) to the invariants.

Run: `.venv/bin/python bench/soak.py [--reservations 500] [--seed 7] [--outages]` (part of
`make bench`, without outages).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, LiteralString, cast

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from localcloud.stack import LocalCloud, Options  # noqa: E402
from tests.support.api import ApiClient  # noqa: E402

SQL = Path(__file__).resolve().parent / "sql" / "soak"
SECONDS_PER_HOUR = 36.0
CLIENT_TIMEOUT_SECONDS = 2.0
# (gpu_type, gpu_count): t4 nodes have 4 GPUs (no multinode), h100 nodes 8 (16: two nodes).
SHAPES = [
    ("t4", 1),
    ("t4", 2),
    ("t4", 4),
    ("h100", 1),
    ("h100", 4),
    ("h100", 8),
    ("h100", 16),
    ("cpu-x86", 0),
]
HOURS = (0.1, 0.15, 0.2)
# --outages: (fault, real seconds), one after the other, a minute apart.
OUTAGES = (("database-outage", 60.0), ("kubernetes-outage", 300.0))
OUTAGE_GAP_SECONDS = 60.0
API_PATIENCE_SECONDS = 600.0  # the soak's own calls ride out any outage of the run
LIVE = ("pending", "queued", "preparing", "active")
ENDED = ("expired", "cancelled", "failed")


def sql(name: str) -> LiteralString:
    """The soak's statement `bench/sql/soak/<name>.sql`."""
    return cast(LiteralString, (SQL / f"{name}.sql").read_text())


@dataclass
class Planned:
    user: str
    gpu_type: str
    gpu_count: int
    hours: float
    cancel_after: float | None  # seconds after submission
    extend: bool
    profiling: bool = False
    reservation_id: str = ""
    submitted: float = 0.0
    cancelled: bool = False
    extended: bool = False


class Soak:
    def __init__(self, cloud: LocalCloud, args: argparse.Namespace):
        self.cloud = cloud
        self.api = ApiClient.for_cloud(cloud)
        self.args = args
        self.rng = random.Random(args.seed)
        self.stop = threading.Event()
        self.overbooked: list[str] = []
        self.profiling_shared: list[str] = []  # nodes seen with profiling and another
        self.faults: Counter[str] = Counter()
        self.api_unavailable = 0
        self.api_errors: list[str] = []  # other 5xx answers (retried)
        self.outages: list[dict[str, Any]] = []  # injected with --outages, as they went
        self.last_statuses: dict[str, str] = {}

    # -- the API, riding out its 503s (database faults) --------------------------------
    def call(self, method: str, path: str, profile: str, body: Any = None) -> Any:
        patience = time.monotonic() + API_PATIENCE_SECONDS
        while True:
            reply = self.api.call(method, path, profile=profile, body=body)
            if reply.status == 503:
                self.api_unavailable += 1
            elif reply.status >= 500:  # retried too (creates carry a client_request_id)
                self.api_errors.append(f"{method} {path.split('/')[-1]}: {reply.status}")
            else:
                return reply
            if time.monotonic() > patience:
                return reply
            time.sleep(0.2)

    def submit(self, plan: Planned) -> None:
        body = {
            "gpu_type": plan.gpu_type,
            "gpu_count": plan.gpu_count,
            "hours": plan.hours,
            "client_request_id": str(uuid.uuid4()),
            "github_user": "alice",
            "profiling": plan.profiling,
        }
        reply = self.call("POST", "/v1/reservations", plan.user, body)
        assert reply.status in (200, 202), reply.body
        plan.reservation_id = reply.body["reservation_id"]
        plan.submitted = time.monotonic()

    # -- background: capacity monitor and faults ---------------------------------------
    def monitor(self) -> None:
        assert self.cloud.kubernetes is not None
        store = self.cloud.kubernetes.store
        while not self.stop.is_set():
            capacity = {
                n["metadata"]["name"]: int(n["status"]["allocatable"].get("nvidia.com/gpu", 0))
                for n in store.list("nodes", None)["items"]
            }
            used: Counter[str] = Counter()
            holders: dict[str, set[tuple[str, bool]]] = {}
            for namespace in ("gpu-dev", "gpu-dev-profiling", "gpu-dev-docker"):
                for pod in store.list("pods", namespace)["items"]:
                    if pod["status"].get("phase") in ("Succeeded", "Failed"):
                        continue
                    node = pod["spec"].get("nodeName")
                    limits = pod["spec"]["containers"][0]["resources"].get("limits", {})
                    used[node] += int(limits.get("nvidia.com/gpu", 0))
                    if node and not pod["metadata"].get("deletionTimestamp"):
                        reservation = pod["metadata"]["labels"].get("gpu-dev/reservation", "")
                        profiling = namespace == "gpu-dev-profiling"
                        holders.setdefault(node, set()).add((reservation, profiling))
            self.overbooked += [n for n, gpus in used.items() if gpus > capacity.get(n, 0)]
            self.profiling_shared += [
                node
                for node, held in holders.items()
                if any(profiling for _, profiling in held) and len({r for r, _ in held}) > 1
            ]
            time.sleep(0.2)

    def inject(self) -> None:
        assert self.cloud.kubernetes is not None
        faults = self.cloud.kubernetes.faults
        rng = random.Random(self.args.seed + 1)
        kinds = [
            ("create", "pods"),
            ("create", "services"),
            ("replace", "configmaps"),
            ("delete", "pods"),
            ("delete", "secrets"),
            ("list", "pods"),
        ]
        while not self.stop.wait(rng.expovariate(1 / self.args.fault_every)):
            choice = rng.randrange(len(kinds) + 2)
            if choice < len(kinds):
                verb, resource = kinds[choice]
                faults.fail_next(verb, resource, 1)
                self.faults[f"kubernetes 500: {verb} {resource}"] += 1
            elif choice == len(kinds):
                faults.delay_seconds = CLIENT_TIMEOUT_SECONDS + 0.5
                self.faults["kubernetes unreachable 1 s"] += 1
                time.sleep(1.0)
                faults.delay_seconds = 0.0
            else:
                try:
                    with psycopg.connect(
                        self.cloud.database_url, autocommit=True, application_name="soak"
                    ) as conn:
                        conn.execute(sql("kill_connections"))
                except psycopg.OperationalError:
                    continue  # the database is out already (--outages)
                self.faults["database connections killed"] += 1

    def inject_outages(self, began: float) -> None:
        """The outages of --outages, through the fault tool's mechanism; each ends on the
        cloud's own timer. Records what was in flight when each began."""
        assert self.cloud.faults is not None
        at = began + self.args.outage_at
        for fault, seconds in OUTAGES:
            if self.stop.wait(max(0.0, at - time.monotonic())):
                return
            in_flight = Counter(self.last_statuses.values())
            self.cloud.faults.inject(fault, seconds)
            self.outages.append(
                {
                    "fault": fault,
                    "seconds": seconds,
                    "at_seconds": round(time.monotonic() - began, 1),
                    "in_flight": {k: in_flight[k] for k in LIVE if in_flight[k]},
                }
            )
            at = time.monotonic() + seconds + OUTAGE_GAP_SECONDS

    # -- the run -----------------------------------------------------------------------
    def statuses(self) -> dict[str, str]:
        """Every reservation's status; while the database is out, the last ones read."""
        try:
            with psycopg.connect(self.cloud.database_url, application_name="soak") as conn:
                rows = conn.execute(sql("statuses")).fetchall()
        except psycopg.OperationalError:
            return self.last_statuses
        self.last_statuses = dict(rows)
        return self.last_statuses

    def run(self) -> dict[str, Any]:
        args = self.args
        plans = [
            Planned(
                user=self.rng.choice(["alice", "bob"]),
                gpu_type=shape[0],
                gpu_count=shape[1],
                hours=self.rng.choice(HOURS),
                cancel_after=self.rng.uniform(0.2, 8.0) if self.rng.random() < 0.2 else None,
                extend=self.rng.random() < 0.08,
            )
            for shape in (self.rng.choice(SHAPES) for _ in range(args.reservations))
        ]
        for plan in plans:  # drawn apart, so the other plans stay those of the same seed
            if self.rng.random() < 0.1:
                plan.user, plan.profiling = "carol", True
        threads = [
            threading.Thread(target=self.monitor, name="soak-monitor", daemon=True),
            threading.Thread(target=self.inject, name="soak-faults", daemon=True),
        ]
        began = time.monotonic()
        if args.outages:
            threads.append(
                threading.Thread(
                    target=self.inject_outages, args=(began,), name="soak-outages", daemon=True
                )
            )
        for thread in threads:
            thread.start()
        waiting = list(plans)
        submitted: list[Planned] = []
        deadline = began + args.timeout
        while time.monotonic() < deadline:
            status = self.statuses()
            live = [p for p in submitted if status.get(p.reservation_id) in LIVE]
            for plan in waiting[: max(0, args.live - len(live))]:
                self.submit(plan)
                submitted.append(plan)
            waiting = waiting[max(0, args.live - len(live)) :]
            now = time.monotonic()
            for plan in live:
                current = status.get(plan.reservation_id)
                if (
                    plan.cancel_after is not None
                    and not plan.cancelled
                    and now - plan.submitted >= plan.cancel_after
                ):
                    self.call("POST", f"/v1/reservations/{plan.reservation_id}/cancel", plan.user)
                    plan.cancelled = True
                elif plan.extend and not plan.extended and current == "active":
                    self.call(
                        "POST",
                        f"/v1/reservations/{plan.reservation_id}/extend",
                        plan.user,
                        {"hours": 1},
                    )
                    plan.extended = True
            outages_done = len(self.outages) == len(OUTAGES) or not args.outages
            if not waiting and not live and len(submitted) == len(plans) and outages_done:
                status = self.statuses()
                if all(status.get(p.reservation_id) in ENDED for p in submitted):
                    break
            time.sleep(0.25)
        elapsed = time.monotonic() - began
        self.stop.set()
        for thread in threads:
            thread.join(5)
        assert self.cloud.kubernetes is not None and self.cloud.faults is not None
        self.cloud.kubernetes.faults.clear()
        self.cloud.faults.clear()
        return self.report(elapsed, submitted)

    # -- the figures -------------------------------------------------------------------
    def leaked_objects(self) -> int:
        """Objects labelled with an ended (or unknown) reservation, once Terminating pods
        have had their grace period."""
        from gpudev.cluster.vocabulary import KINDS, RESERVATION_LABEL

        assert self.cloud.kubernetes is not None
        store = self.cloud.kubernetes.store
        deadline = time.monotonic() + 15
        while True:
            status = self.statuses()
            leaked = [
                item
                for kind in KINDS
                for namespace in ("gpu-dev", "gpu-dev-profiling", "gpu-dev-docker")
                for item in store.list(kind, namespace, RESERVATION_LABEL)["items"]
                if status.get(item["metadata"]["labels"][RESERVATION_LABEL]) not in LIVE
            ]
            if not leaked or time.monotonic() > deadline:
                return len(leaked)
            time.sleep(0.5)

    def report(self, elapsed: float, submitted: list[Planned]) -> dict[str, Any]:
        ids = [p.reservation_id for p in submitted]
        with psycopg.connect(self.cloud.database_url, application_name="soak") as conn:
            held, no_reason, not_ended = conn.execute(sql("invariants")).fetchone() or (0, 0, 0)
            pairs = conn.execute(
                sql("queue_order"), {"ids": ids, "hours": [p.hours for p in submitted]}
            ).fetchall()
            endings: dict[str, int] = dict(conn.execute(sql("endings")).fetchall())
            failures = conn.execute(sql("failures")).fetchall()
            timing = conn.execute(sql("timing"), {"ids": ids}).fetchall()
            swept = conn.execute(sql("sweeper")).fetchone() or (0, 0, 0, 0)
            started = float((conn.execute(sql("first_submitted")).fetchone() or (0,))[0])
            lost_grants = int(
                (conn.execute(sql("lost_grants"), {"ids": ids}).fetchone() or (0,))[0]
            )
        violations = [pair[1:] for pair in pairs if pair[0]]
        backfilled = [pair[1:] for pair in pairs if not pair[0]]
        to_active = sorted(float(t[0]) for t in timing)
        provisioning = sorted(float(t[1]) for t in timing if t[1] is not None)
        last_active = max((float(t[2]) for t in timing), default=started)
        minutes = max(last_active - started, 1e-9) / 60

        def pct(values: list[float], q: float) -> float:
            return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")

        invariants = {
            "overbooked_nodes": len(set(self.overbooked)),
            "profiling_nodes_shared": len(set(self.profiling_shared)),
            "queue_order_violations": len(violations),
            "leaked_objects": self.leaked_objects(),
            "slots_held_by_ended": int(held),
            "ended_without_reason": int(no_reason),
            "not_ended": int(not_ended),
        }
        if self.args.outages:
            invariants |= {
                "failed_reservations": endings.get("failed", 0),
                "lost_grants": lost_grants,
            }
        return {
            "reservations": len(submitted),
            "elapsed_seconds": round(elapsed, 1),
            "endings": endings,
            "failed_reasons": failures,
            # (type, count, earlier: id, hours, created, granted; later: id, hours, created,
            #  granted; the head of the queue then: id, count, hours), the first five
            "queue_order_violating_pairs": violations[:5],
            # Same pairs where the later one asked for less time: EASY backfill, not counted.
            "same_shape_passes_by_backfill": len(backfilled),
            "backfill_passes_first": backfilled[:3],
            "outages": self.outages,
            "faults": dict(self.faults),
            "faults_total": sum(self.faults.values()),
            "api_503s_retried": self.api_unavailable,
            "api_other_5xx_retried": self.api_errors,
            # Repairs by the sweeper (every second): what the lifecycle left behind itself.
            "sweeper": {
                "objects_deleted": int(swept[0]),
                "reservations_ended": int(swept[1]),
                "create_jobs_resent": int(swept[2]),
                "failed_runs": int(swept[3]),
            },
            "invariants": invariants,
            "throughput": {
                "activated": len(to_active),
                "reservations_per_minute": round(len(to_active) / minutes, 1),
                "submit_to_active_p50_s": round(statistics.median(to_active), 2)
                if to_active
                else None,
                "submit_to_active_p90_s": round(pct(to_active, 0.9), 2),
                "grant_to_active_p50_s": round(statistics.median(provisioning), 2)
                if provisioning
                else None,
                "grant_to_active_p90_s": round(pct(provisioning, 0.9), 2),
            },
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reservations", type=int, default=500)
    parser.add_argument("--live", type=int, default=30, help="submitted and not ended, at most")
    parser.add_argument("--fault-every", type=float, default=5.0, help="seconds, on average")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds for the run")
    parser.add_argument(
        "--outages",
        action="store_true",
        help="inject a 60 s database outage, then a 5 min Kubernetes API outage, mid-run",
    )
    parser.add_argument(
        "--outage-at", type=float, default=90.0, help="seconds into the run the first begins"
    )
    args = parser.parse_args()
    os.environ["KUBERNETES_TIMEOUT_SECONDS"] = str(CLIENT_TIMEOUT_SECONDS)
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"  # no EMF on stdout
    options = Options(
        tick_seconds=1.0,
        kubelet_delay_seconds=0.2,
        seconds_per_hour=SECONDS_PER_HOUR,
        ready_timeout_seconds=6.0,
        ready_poll_seconds=1,
        termination_seconds_scale=0.1,
        max_live_reservations_per_user=10_000,
        max_gpus_per_user=100_000,
        api_requests_per_minute=1_000_000,  # the per-principal rate out of the way too
        api_request_burst=1_000_000,
        # Outages last real seconds: so do the retries that ride them out.
        retry_seconds_per_hour=3600.0 if args.outages else None,
    )
    (ROOT / ".local").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-soak-", dir=ROOT / ".local") as tmp:
        Path(tmp).chmod(0o755)
        cloud = LocalCloud(Path(tmp), options).start()
        try:
            report = Soak(cloud, args).run()
        finally:
            cloud.stop()
    print(json.dumps(report, indent=2, default=str))
    bad = {k: v for k, v in report["invariants"].items() if v}
    print("invariants: all 0" if not bad else f"invariants VIOLATED: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
