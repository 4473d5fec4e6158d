"""How long the local cloud takes to stop, idle and busy (what Ctrl+C waits for).

Each scenario (see tests/support/stop_scenario.py) starts a LocalCloud in this process on its
own embedded PostgreSQL (a temporary directory under .local, free ports), then stops it and
prints the time `stop()` took, step by step, and which of our threads were still running:

- idle: nothing submitted;
- busy: reservations submitted as alice, then the Kubernetes stand-in made slow (30 s per
  response), so handlers are blocked in Kubernetes calls when the stop begins.

Run: `.venv/bin/python bench/local_cloud_stop.py [idle] [busy]` (part of `make bench`).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.support.stop_scenario import run

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    for scenario in sys.argv[1:] or ["idle", "busy"]:
        # Under the project (like make run's), so the unprivileged server user can reach it.
        (ROOT / ".local").mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="bench-stop-", dir=ROOT / ".local") as tmp:
            Path(tmp).chmod(0o755)
            report = run(Path(tmp), scenario)
        steps = ", ".join(f"{step} {seconds:.2f}" for step, seconds in report["steps"])
        print(f"{scenario:5} stop: {report['stop_seconds']:5.2f} s ({steps})")
        print(f"      still running right after: {[t['name'] for t in report['alive_after_stop']]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
