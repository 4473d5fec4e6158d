"""The garbage collector's tuning while a local cloud runs in this process."""

from __future__ import annotations

import gc
from collections.abc import Callable

# The collector's thresholds while a cloud runs: young collections every 10,000 net
# allocations instead of 700, and a full pass considered after 50 middle ones instead of 10.
CLOUD_GC_THRESHOLDS = (10_000, 20, 50)


def collect_less() -> Callable[[], None]:
    """Make the collector's pauses rare in this process; what undoes it, for the stop.

    Every thread of the process stops while the collector runs, the gateway's too. What the
    start made (moto's and botocore's models, the stand-in, the handlers' modules) lives as
    long as the cloud, yet each full pass walked it: passes of up to a second under
    bench/api_load.py. It is frozen out of them; and since moto, the Step Functions
    interpreter and the handlers allocate heavily, Python's default thresholds promoted their
    short-lived objects into the old generation and ran a full pass every second or two (12
    in 15 s with one client, up to 0.27 s each): with CLOUD_GC_THRESHOLDS, none in 15 s."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*CLOUD_GC_THRESHOLDS)

    def restore() -> None:
        gc.set_threshold(*thresholds)
        gc.unfreeze()

    return restore
