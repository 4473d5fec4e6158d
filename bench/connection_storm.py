"""A backlog of 1,000 jobs after a database outage, drained with the connections bounded
(tests/support/connection_storm.py says how): prints the peak connections to the database, in
all and per function, the drain time and the dead-letter queue's count.

What it shows, and what only AWS would: the local cloud runs the jobs consumer in processes
of its own, each with its own pool (2 connections at most), and polls the queue with at most
`min(5, the queue's max_concurrency)` batches at once, as the event source's ScalingConfig
caps Lambda. So the consumer's connections stay under its cap times its pool, and no job is
lost to the dead-letter queue. It cannot show Lambda scaling an uncapped event source to
hundreds of environments (the local cloud never runs more than five batches at once), nor
Aurora's own max_connections; the budget against those is arithmetic
(docs/operator-guide.md "Database connections").

Run: `.venv/bin/python bench/connection_storm.py [--jobs 1000] [--outage-seconds 60]
[--processes 10]`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from cdk_app.declaration import DB_POOL_MAX_SIZE, DEPLOYMENT, JOBS_CONSUMER
from tests.support.connection_storm import CONSUMER, run

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000)
    parser.add_argument("--outage-seconds", type=float, default=60.0)
    parser.add_argument("--processes", type=int, default=10, help="--function-processes")
    args = parser.parse_args()
    (ROOT / ".local").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-storm-", dir=ROOT / ".local") as tmp:
        Path(tmp).chmod(0o755)
        report = run(Path(tmp), args.jobs, args.outage_seconds, args.processes)
    cap = DEPLOYMENT.concurrency_cap(JOBS_CONSUMER.name) or 0
    limit = cap * DB_POOL_MAX_SIZE
    print(f"{report.jobs} jobs after a {report.outage_seconds:g} s database outage")
    print(f"  drained in {report.drain_seconds:.1f} s after the outage ended")
    print(f"  peak connections, all functions: {report.peak_connections}")
    for name, peak in sorted(report.peak_by_name.items()):
        print(f"    {name or '(unnamed: the local cloud itself)'}: {peak}")
    consumer = report.peak_by_name.get(CONSUMER, 0)
    print(f"  the consumer's peak {consumer} <= its cap {cap} x pool {DB_POOL_MAX_SIZE} = {limit}")
    print(f"  consumer processes: {report.consumer_processes}; samples: {report.samples}")
    print(f"  dead-letter queue: {report.dead_letters}")
    return 0 if consumer <= limit and report.dead_letters == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
