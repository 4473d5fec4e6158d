"""Reconcilers at 10-100x the reference's scale, each beside a naive per-item version run on
the same data in the same process:

- disk reconciliation: 10,000 EBS volumes, 30,000 snapshots, 10,000 existing rows
  (ours: bulk paginated listings + set-based SQL; naive: one snapshot query per volume and
  per-row SELECT/INSERT/UPDATE, as the reference does);
- GPU availability: 1,000 nodes, 20,000 pods on the Kubernetes stand-in over HTTP
  (ours: one node list + one pod list; naive: one pod list per node, as the reference does).

EC2 and Auto Scaling are boundary fakes that count calls and page like AWS (moto ignores
pagination); Kubernetes calls are counted by the stand-in; SQL statements are counted on the
connection (COMMIT/SAVEPOINT issued by psycopg itself are not counted). Run: `make bench`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from gpudev.availability.service import update_availability
from gpudev.db.migrations import apply_migrations
from gpudev.disks.reconcile import reconcile_disks
from gpudev.signals import Signals
from localcloud.kubernetes.store import ObjectStore
from localcloud.postgres import EmbeddedPostgres
from tests.support.counting import CountingConnection
from tests.support.kubernetes import stand_in_api_client, stand_in_server

ROOT = Path(__file__).resolve().parent.parent
VOLUMES, SNAPSHOTS_PER_VOLUME, NODES, PODS = 10_000, 3, 1_000, 20_000
T0 = datetime(2026, 1, 1, tzinfo=UTC)


class FakeEc2:
    """describe_volumes / describe_snapshots with AWS-style pages, counting calls."""

    def __init__(self, volumes: list[dict[str, Any]], snapshots: list[dict[str, Any]]):
        self.volumes, self.snapshots, self.calls = volumes, snapshots, 0
        # Indexed, so the naive path pays for its round trips, not for this fake's lookups.
        self._by_disk: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for snapshot in snapshots:
            self._by_disk.setdefault(snapshot["_key"], []).append(snapshot)

    def _pages(self, items: list[dict[str, Any]], key: str, size: int) -> Iterator[dict]:
        for start in range(0, len(items), size):
            self.calls += 1
            yield {key: items[start : start + size]}

    def get_paginator(self, operation: str) -> Any:
        ec2 = self

        class Paginator:
            def paginate(self, PaginationConfig: dict[str, int], **_: Any) -> Iterator[dict]:
                if operation == "describe_volumes":
                    return ec2._pages(ec2.volumes, "Volumes", PaginationConfig["PageSize"])
                return ec2._pages(ec2.snapshots, "Snapshots", PaginationConfig["PageSize"])

        return Paginator()

    def snapshots_of(self, user: str, disk: str) -> list[dict[str, Any]]:
        self.calls += 1  # one DescribeSnapshots per volume, filtered by its tags
        return self._by_disk.get((user, disk), [])


def _tags(**tags: str) -> list[dict[str, str]]:
    return [
        {"Key": k.replace("_", "-") if k == "gpu_dev_user" else k, "Value": v}
        for k, v in tags.items()
    ]


def disk_data() -> tuple[list[dict], list[dict]]:
    volumes, snapshots = [], []
    for i in range(VOLUMES):
        user, disk = f"user{i % 2000}", f"disk{i // 2000}"
        volumes.append(
            {
                "VolumeId": f"vol-{i:08x}",
                "Size": 1024,
                "Tags": _tags(gpu_dev_user=user, disk_name=disk),
                "Attachments": [{"State": "attached"}] if i % 3 == 0 else [],
            }
        )
        for j in range(SNAPSHOTS_PER_VOLUME):
            snapshots.append(
                {
                    "SnapshotId": f"snap-{i:08x}{j}",
                    "_key": (user, disk),
                    "State": "pending" if j == 2 and i % 10 == 0 else "completed",
                    "StartTime": T0 + timedelta(days=j),
                    "Tags": _tags(gpu_dev_user=user, disk_name=disk),
                }
            )
    return volumes, snapshots


def seed_rows(url: str, volumes: list[dict]) -> None:
    """Existing rows for every volume, half of them drifted (size), so both paths must work."""
    copy = "COPY disks (user_id, disk_name, ebs_volume_id, size_gb) FROM STDIN"
    with psycopg.connect(url) as conn, conn.cursor() as cur, cur.copy(copy) as rows:
        for i, v in enumerate(volumes):
            tags = {t["Key"]: t["Value"] for t in v["Tags"]}
            rows.write_row(
                (tags["gpu-dev-user"], tags["disk_name"], v["VolumeId"], 512 if i % 2 else 1024)
            )


def naive_reconcile(conn: CountingConnection, ec2: FakeEc2) -> None:
    """The reference's shape: per volume, query its snapshots, then read and write its row."""
    for volume in ec2.volumes:
        tags = {t["Key"]: t["Value"] for t in volume["Tags"]}
        user, disk = tags["gpu-dev-user"], tags["disk_name"]
        snaps = ec2.snapshots_of(user, disk)
        completed = [s for s in snaps if s["State"] == "completed"]
        row = conn.execute(
            "SELECT disk_id FROM disks WHERE ebs_volume_id = %s", (volume["VolumeId"],)
        ).fetchone()
        if row is None:
            row = conn.execute(
                "SELECT disk_id FROM disks WHERE user_id = %s AND disk_name = %s", (user, disk)
            ).fetchone()
        # What ours writes (in_use is derived from the disk's holder, migrations/0011).
        values = (
            volume["Size"],
            len(completed),
            any(s["State"] == "pending" for s in snaps),
            max((s["StartTime"] for s in completed), default=None),
        )
        if row is None:
            conn.execute(
                "INSERT INTO disks (user_id, disk_name, ebs_volume_id, size_gb,"
                " snapshot_count, is_backing_up, last_snapshot_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                (user, disk, volume["VolumeId"], *values),
            )
        else:
            conn.execute(
                "UPDATE disks SET size_gb = %s, snapshot_count = %s,"
                " is_backing_up = %s, last_snapshot_at = %s WHERE disk_id = %s",
                (*values, row[0]),
            )
    conn.commit()


def bench_disks(admin_url: str) -> None:
    volumes, snapshots = disk_data()
    results = {}
    for name in ("ours", "naive"):
        db = f"bench_disks_{name}"
        url = _fresh_database(admin_url, db)
        seed_rows(url, volumes)
        ec2 = FakeEc2(volumes, snapshots)
        with psycopg.connect(url) as raw:
            conn = CountingConnection(raw)
            start = time.perf_counter()
            if name == "ours":
                stats = reconcile_disks(conn, ec2, "bench").statistics  # type: ignore[arg-type]
            else:
                naive_reconcile(conn, ec2)
                stats = {}
            elapsed = time.perf_counter() - start
        results[name] = (elapsed, ec2.calls, conn.statements, stats)
    print(
        f"disk reconciliation: {VOLUMES:,} volumes, {len(snapshots):,} snapshots, "
        f"{VOLUMES:,} rows (half drifted)"
    )
    _report(results)
    print(f"  statistics (ours): {results['ours'][3]}")


def _fresh_database(admin_url: str, name: str) -> str:
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(url, autocommit=True) as conn:
        apply_migrations(conn, ROOT / "migrations")
    return url


class FakeAutoScaling:
    def __init__(self, groups: list[dict[str, Any]]):
        self.groups, self.calls = groups, 0

    def get_paginator(self, _operation: str) -> Any:
        scaling = self

        class Paginator:
            def paginate(self) -> Iterator[dict]:
                for start in range(0, len(scaling.groups), 100):  # AWS's maximum page size
                    scaling.calls += 1
                    yield {"AutoScalingGroups": scaling.groups[start : start + 100]}

        return Paginator()


def cluster_data() -> tuple[ObjectStore, list[dict[str, Any]]]:
    store = ObjectStore()
    types = [("h100", 8), ("a100", 8), ("t4", 4), ("l4", 4)]
    groups = []
    rng = random.Random(7)
    nodes_per_type = NODES // len(types)
    for gpu_type, gpus in types:
        instances = [f"i-{gpu_type}-{n:05d}" for n in range(nodes_per_type)]
        groups.append(
            {
                "AutoScalingGroupName": f"pytorch-gpu-dev-gpu-nodes-{gpu_type}",
                "DesiredCapacity": nodes_per_type,
                "Instances": [{"InstanceId": i, "LifecycleState": "InService"} for i in instances],
            }
        )
        for name in instances:
            store.create(
                "nodes",
                "",
                {
                    "metadata": {"name": name, "labels": {"GpuType": gpu_type}},
                    "status": {
                        "allocatable": {"nvidia.com/gpu": str(gpus)},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                },
            )
    node_names = [n["metadata"]["name"] for n in store.list("nodes", None)["items"]]
    for p in range(PODS):
        store.create(
            "pods",
            "gpu-dev",
            {
                "metadata": {"name": f"gpu-dev-{p:06d}"},
                "spec": {
                    "nodeName": rng.choice(node_names),
                    "containers": [
                        {
                            "name": "c",
                            "image": "pytorch/pytorch",
                            "resources": {
                                "requests": {"nvidia.com/gpu": "0"},
                                "limits": {"nvidia.com/gpu": "0"},
                            },
                        }
                    ],
                },
            },
        )
    return store, groups


def naive_availability(conn: CountingConnection, core: Any, scaling: FakeAutoScaling) -> None:
    """The reference's shape: per node, list the pods on it; per type, one UPDATE."""
    import json

    from gpudev.availability.service import list_scaling_groups

    list_scaling_groups(scaling)
    nodes = json.loads(core.list_node(_preload_content=False).data)["items"]
    free: dict[str, int] = {}
    for node in nodes:
        pods = json.loads(
            core.list_pod_for_all_namespaces(
                field_selector=f"spec.nodeName={node['metadata']['name']}", _preload_content=False
            ).data
        )["items"]
        used = sum(
            int(c["resources"]["requests"].get("nvidia.com/gpu", 0))
            for p in pods
            for c in p["spec"]["containers"]
        )
        gpu_type = node["metadata"]["labels"]["GpuType"]
        allocatable = int(node["status"]["allocatable"]["nvidia.com/gpu"])
        free[gpu_type] = free.get(gpu_type, 0) + max(0, allocatable - used)
    for gpu_type, available in free.items():
        conn.execute(
            "UPDATE gpu_types SET available_gpus = %s WHERE gpu_type = %s", (available, gpu_type)
        )
    conn.commit()


def bench_availability(admin_url: str) -> None:
    from kubernetes import client

    store, groups = cluster_data()
    server = stand_in_server(store, "bench").start()
    api_client = stand_in_api_client(server)
    url = _fresh_database(admin_url, "bench_availability")
    core = client.CoreV1Api(api_client)
    # Warm-up: the client compiles its pydantic validators on each method's first call.
    core.list_node(field_selector="metadata.name=none", _preload_content=False)
    core.list_pod_for_all_namespaces(field_selector="spec.nodeName=none", _preload_content=False)
    results = {}
    try:
        for name, latency in (("ours", 0.0), ("naive", 0.0), ("ours", 0.005), ("naive", 0.005)):
            server.faults.delay_seconds = latency
            label = f"{name}{' +5ms' if latency else ''}"
            scaling = FakeAutoScaling(groups)
            before = server.requests
            with psycopg.connect(url) as raw:
                conn = CountingConnection(raw)
                start = time.perf_counter()
                if name == "ours":
                    update_availability(conn, scaling, lambda: api_client, Signals(None), "bench")  # type: ignore[arg-type]
                else:
                    naive_availability(conn, core, scaling)
                elapsed = time.perf_counter() - start
            results[label] = (elapsed, scaling.calls, conn.statements, server.requests - before)
    finally:
        api_client.close()
        server.stop()
    print(
        f"GPU availability: {NODES:,} nodes, {PODS:,} pods, {len(groups)} Auto Scaling groups"
        " (+5ms: the stand-in adds 5 ms per request, a modest EKS API round trip)"
    )
    _report(results, kubernetes=True)
    print(f"  naive / ours at +5ms: {results['naive +5ms'][0] / results['ours +5ms'][0]:.1f}x")


def _report(results: dict[str, tuple], kubernetes: bool = False) -> None:
    header = f"  {'':6} {'wall s':>8} {'AWS calls':>10} {'SQL stmts':>10}"
    print(
        header.replace("      ", "            ", 1) + (f" {'k8s calls':>10}" if kubernetes else "")
    )
    for name, row in results.items():
        line = f"  {name:12} {row[0]:8.2f} {row[1]:10,} {row[2]:10,}"
        print(line + (f" {row[3]:10,}" if kubernetes else ""))
    ours, naive = results["ours"], results["naive"]
    print(f"  naive / ours: {naive[0] / ours[0]:.1f}x wall time")


def main() -> None:
    with EmbeddedPostgres(ROOT / ".local" / "bench-postgres" / "data") as server:
        bench_disks(server.admin_url)
        bench_availability(server.admin_url)


if __name__ == "__main__":
    main()
