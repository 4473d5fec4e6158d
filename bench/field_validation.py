"""What kube-apiserver's default `fieldValidation` (Warn: unknown fields become `Warning`
headers) costs the stand-in on its hot writes, our own pod and control ConfigMap.

The API server's POST of each (a fresh name per call) through the whole request path
(authentication, RBAC, decoding, type and field checks, admission, validation, defaults,
store, JSON encoding), with `fieldValidation=Ignore` (no field walk) and with `Warn` (the
walk over the described schemas), CPU time (process time) per call, median of `--runs`
runs of `--calls` calls each; and the field walk alone (`openapi.check_fields`).
Run: `make bench` (~5 s).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.cluster_tick import H100, _reservation
from gpudev.cluster import objects
from gpudev.cluster.names import Placement
from localcloud.http import RawRequest
from localcloud.kubernetes import openapi, request_body
from localcloud.kubernetes.store import ObjectStore
from tests.support.kubernetes import auth_headers, stand_in_server

NAMESPACE = "gpu-dev"


def _manifests() -> dict[str, dict[str, Any]]:
    reservation = _reservation(0)
    placement = Placement(0, "i-0", "10.0.0.1", 1)
    return {
        "pods": objects.pod(reservation, H100, placement, "pytorch/pytorch:2.5"),
        "configmaps": objects.control_config_map(reservation, "2026-11-27T19:00:00Z", None, ""),
    }


def _post(resource: str, manifest: dict[str, Any], directive: str) -> Callable[[], None]:
    store = ObjectStore()
    server = stand_in_server(store, "bench")
    headers = auth_headers("bench") | {"Content-Type": "application/json"}
    path = f"/api/v1/namespaces/{NAMESPACE}/{resource}?fieldValidation={directive}"
    count = iter(range(10**9))

    def call() -> None:
        body = manifest | {"metadata": manifest["metadata"] | {"name": f"w{next(count)}"}}
        request = RawRequest("POST", path, headers, json.dumps(body).encode(), "127.0.0.1")
        status, _, _ = server._handle(request)
        assert status == 201, status

    return call


def _walk(resource: str, manifest: dict[str, Any]) -> Callable[[], None]:
    body = request_body.Body(manifest)

    def call() -> None:
        assert openapi.check_fields("POST", resource, body, {"fieldValidation": "Warn"}) == []

    return call


def _per_call(calls: int, *functions: Callable[[], None]) -> list[float]:
    """One run: each function's CPU time per call, in turn."""
    timings = []
    for function in functions:
        start = time.process_time()
        for _ in range(calls):
            function()
        timings.append((time.process_time() - start) / calls)
    return timings


def _medians(runs: int, calls: int, *functions: Callable[[], None]) -> list[float]:
    """Runs interleaved, so a busy machine slows each alike; the median of each."""
    timings = [_per_call(calls, *functions) for _ in range(runs)]
    return [statistics.median(column) for column in zip(*timings, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    for resource, manifest in _manifests().items():
        ignore, warn, walk = _medians(
            args.runs,
            args.calls,
            _post(resource, manifest, "Ignore"),
            _post(resource, manifest, "Warn"),
            _walk(resource, manifest),
        )
        print(
            f"POST {resource}: Ignore {ignore * 1e6:.0f} µs, Warn {warn * 1e6:.0f} µs "
            f"({(warn - ignore) / ignore:+.1%}); field walk alone {walk * 1e6:.1f} µs "
            f"({walk / ignore:.1%} of the Ignore write)"
        )


if __name__ == "__main__":
    main()
