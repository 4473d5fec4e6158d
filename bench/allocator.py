"""The allocator's pass as the queue grows (1,000 queued on 1,000 nodes, 10,000 on 1,000,
100,000 on 5,000), beside a naive per-reservation pass run on the 1,000-queued data in the
same process. Every scale runs `--runs` times (default 5), each on a fresh copy of the same
seeded database and with a fresh plan memo; min and median are printed (the machine is
shared).

Cluster: h100 nodes (8 GPUs each); 90% of them are fully held by active reservations ending
over the next 8 hours, the rest are free. Queue: reservations of 1, 2, 4 or 8 GPUs (some
multinode 16), FIFO by creation time. Each run is a first pass (every position and estimated
start written), the next pass 5 s later (its grants' ends now read back from their rows: the
same ends the first pass planned, so it writes nothing), a pass a minute later with nothing
changed (steady state: starts are moments, so nothing is written, and the plan of the
previous pass is reused, as in a warm Lambda environment), the same pass with an empty
plan memo (a cold environment: the whole plan computed), and a pass after the active
reservation that ends first ends early (tear down released its node: its grants and every
start behind them move, a realistic worst case for the write). Wall time is printed beside the
benchmark process's CPU time (wall time includes waiting for a core).

- ours: one node sync, three reads, one INSERT ... unnest for every grant, one UPDATE ...
  unnest for the positions and estimated starts that changed (EASY backfill and ETAs
  computed in memory);
- naive: what a per-row implementation does: for each queued reservation, read the free
  slots, then write its grant or its position (one statement per slot granted).

Each runs on its own copy of the same seeded database (CREATE DATABASE … TEMPLATE). SQL
statements are counted on the connection. Run: `make bench`, or `bench/allocator.py --quick`
(1,000 and 10,000 queued only), `--queued 100000` (that scale only).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from bench.support.allocator_naive import naive_pass
from bench.support.allocator_passes import PASSES, Measured, measure, runs_of_ours
from bench.support.allocator_seed import create_database, seed_database
from gpudev.settings import LifecycleSettings
from localcloud.postgres import EmbeddedPostgres

ROOT = Path(__file__).resolve().parent.parent
SCALES = ((1_000, 1_000), (10_000, 1_000), (100_000, 5_000))  # (queued, nodes)


def _row(label: str, runs: list[Measured]) -> str:
    walls = [m.wall for m in runs]
    last = runs[-1]
    written = sorted({m.written for m in runs})  # the same in every run, unless one moved
    return (
        f"  {label:30} {min(walls):6.3f} / {statistics.median(walls):6.3f} s wall"
        f" (in SQL {statistics.median(m.sql for m in runs):6.3f} s)"
        f" {statistics.median(m.cpu for m in runs):6.3f} s cpu"
        f"  {last.statements:5,} statements  {last.granted:3} granted"
        f"  {'–'.join(f'{w:,}' for w in written):>7} rows written"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="only 1,000 and 10,000 queued")
    parser.add_argument("--runs", type=int, default=5, help="runs per scale (default 5)")
    parser.add_argument("--queued", type=int, help="only the scale with this many queued")
    args = parser.parse_args()
    scales = SCALES[:2] if args.quick else SCALES
    if args.queued is not None:
        scales = tuple(scale for scale in scales if scale[0] == args.queued)
        if not scales:
            parser.error(f"--queued: one of {', '.join(str(q) for q, _ in SCALES)}")
    settings = LifecycleSettings()
    print(
        "allocator pass: h100 nodes of 8 GPUs, 90% fully held; the first pass writes every"
        f" position and estimated start, the next ones only what changed; {args.runs} runs,"
        " wall min / median, the rest medians"
    )
    medians: list[tuple[int, list[float]]] = []
    with EmbeddedPostgres(ROOT / ".local" / "bench-postgres" / "data") as server:
        for queued, count in scales:
            seed = create_database(server.admin_url, "bench_allocator_seed")
            seed_database(seed, settings, queued, count)
            runs = runs_of_ours(server.admin_url, settings, count, args.runs)
            passes = [[run[i] for run in runs] for i in range(len(PASSES))]
            for i, label in enumerate(PASSES):
                title = f"ours {queued:>7,} queued {count:>5,} nodes" if i == 0 else label
                print(_row(title, passes[i]))
            medians.append((queued, [statistics.median(m.wall for m in p) for p in passes]))
            if queued == SCALES[0][0]:
                naive = []
                for _ in range(min(args.runs, 3)):
                    url = create_database(
                        server.admin_url, "bench_allocator_naive", "bench_allocator_seed"
                    )
                    naive += measure(url, [naive_pass])
                print(_row(f"naive {queued:>6,} queued {count:>5,} nodes", naive))
                naive_wall = statistics.median(m.wall for m in naive)
                first, steady = medians[0][1][0], medians[0][1][2]
                print(
                    f"  ratio (median wall): naive / our first pass {naive_wall / first:.0f}x,"
                    f" / our pass a minute later {naive_wall / steady:.0f}x;"
                    f" {naive[-1].statements / max(1, passes[0][-1].statements):,.0f}x"
                    " statements (naive also estimates waits as 15 min per position; ours"
                    " replays known end times)"
                )
    print(
        "  growth, median wall per 1,000 queued"
        " (first pass / a minute later / empty memo / after an early end):"
    )
    for queued, walls in medians:
        per = [w / queued * 1e6 for w in walls]
        print(
            f"    {queued:>7,} queued: {per[0]:6.1f} / {per[2]:6.1f} / {per[3]:6.1f}"
            f" / {per[4]:6.1f} ms"
        )


if __name__ == "__main__":
    main()
