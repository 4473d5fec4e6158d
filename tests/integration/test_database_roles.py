"""The function groups' PostgreSQL roles (migrations/0006_function_roles.sql) hold exactly
what their SQL needs: every statement a group runs passes the privilege checks as that
group, and what lies outside its grants is refused.

Locally every function logs in as one superuser (docs/local-cloud.md, Known differences),
so these tests are where the grants are proven. Each test runs in the shared rolled-back
transaction with `SET LOCAL ROLE <group>`, which drops the superuser's rights.

`EXPLAIN (GENERIC_PLAN)` (PostgreSQL 16+) plans a statement with its parameters unbound and
starts the executor, which is where table and column privileges are checked, so every
statement is checked without data to run it on; triggers and identity columns act only at
execution, so representative statements also run for real.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg import errors, sql

from gpudev.db.queries import all_query_names, query

API = "gpudev_api"
LIFECYCLE = "gpudev_lifecycle"
RECONCILERS = "gpudev_reconcilers"
PURGE = "gpudev_purge"

# What each group runs: the functions' code paths (handlers → services → repositories).
STATEMENTS: dict[str, tuple[str, ...]] = {
    API: (
        "users/bind_principal",
        "users/get",
        "users/request_lock",
        "users/set_github_username",
        "reservations/change",
        "reservations/events",
        "reservations/find_by_prefix",
        "reservations/get",
        "reservations/list_for_user",
        "reservations/request_cancel",
        "reservations/submit",
        "reservations/submit_context",
        "disks/get",
        "disks/insert",
        "disks/list_for_user",
        "disks/rename",
        "disks/request_create",
        "disks/request_clone",
        "disks/request_delete",
        "disks/request_restore",
        "disks/live_holder",
        "gpu_types/get",
        "gpu_types/list_active",
        "capacity/by_type",
        "outbox/delete_sent",
        "notifications/contact",
        "notifications/save_contact",
        "notifications/mark_verified",
        "usage/report",
        "usage/live",
        "usage/find_any",
        "ratelimit/take",
        "utilisation/set_idle_timeout",
        "utilisation/recent",
        "utilisation/recent_use",
        # images built from a Dockerfile (migrations/0045)
        "image_builds/add_owner",
        "image_builds/building_for",
        "image_builds/claim",
        "image_builds/finish",
        "image_builds/get",
        "image_builds/image_gone",
        "image_builds/release",
        "image_builds/list_for_user",
        "image_builds/owned",
        "image_builds/progress",
        "image_builds/started",
    ),
    LIFECYCLE: (
        "lifecycle/activate",
        "lifecycle/checkpoint",
        "lifecycle/change_wake_age",
        "lifecycle/record_change_wake",
        "lifecycle/end",
        "lifecycle/park",
        "lifecycle/preparing",
        "lifecycle/progress",
        # the reservation's image build (migrations/0045)
        "image_builds/claim",
        "image_builds/finish",
        "image_builds/get",
        "image_builds/image_gone",
        "image_builds/release",
        "image_builds/progress",
        "image_builds/started",
        "image_builds/reservation_image",
        "image_builds/reservation_progress",
        "lifecycle/record_event",
        "lifecycle/outage_over",
        "lifecycle/waiting",
        "lifecycle/start",
        "allocation/grant",
        "allocation/capacity_gone",
        "allocation/holdings",
        "allocation/lock",
        "allocation/mark_signalled",
        "allocation/nodes",
        "allocation/placements",
        "allocation/queue",
        "allocation/record_type_waits",
        "allocation/record_waits",
        "allocation/release",
        "allocation/sync_nodes",
        "allocation/unsignalled",
        "reservations/get",
        "reservations/set_status",
        # the jobs consumer's disk operations
        "disks/get_by_id",
        "disks/operation_done",
        "disks/operation_failed",
        "disks/operation_lock",
        "disks/operation_start",
        "disks/operation_unlock",
        "gpu_types/get",
        "gpu_types/list_active",
        "disk_holds/free",
        "disk_holds/held_by",
        "disk_holds/named",
        "disk_holds/record_error",
        "disk_holds/record_listing",
        "disk_holds/record_snapshot",
        "disk_holds/record_volume",
        "disk_holds/take",
        # the sweeper logs in as the lifecycle
        "sweeper/held_disks",
        "sweeper/hold_unchanged",
        "sweeper/live",
        "sweeper/record_resends",
        "sweeper/try_lock",
        "sweeper/unlock",
        "outbox/relay_batch",
        "outbox/relay_done",
        # the event relay and the notifier log in as the lifecycle (migrations/0039)
        "bus_events/relay_batch",
        "bus_events/relay_done",
        "notifications/contact",
        "notifications/mark_verified",
        "notifications/claim_delivery",
        "notifications/settle_delivery",
        "notifications/recent_sends",
        "reconciler_runs/finish",
        "reconciler_runs/start",
        # the users' EFS access points (migrations/0038)
        "shared_files/claim",
        "shared_files/forget",
        "shared_files/locked",
        "shared_files/of_user",
        "shared_files/record",
    ),
    RECONCILERS: (
        "gpu_types/list_active",
        "gpu_types/update_availability",
        "reconciler_runs/finish",
        "reconciler_runs/latest",
        "reconciler_runs/record",
        "reconciler_runs/start",
        "disk_reconciliation/import",
        "disk_reconciliation/rows",
        "disk_reconciliation/sync",
        "disk_reconciliation/try_lock",
        # the availability updater watches the active reservations' pods
        "pod_health/live",
        "pod_health/record",
        # ... and collects GPU use, deciding idle reclaim (migrations/0040)
        "utilisation/try_lock",
        "utilisation/candidates",
        "utilisation/record_samples",
        "utilisation/record_idle",
        # ... and gives EFA nodes their Elastic IPs, one run at a time
        "node_addresses/try_lock",
        "node_addresses/unlock",
        # ... and keeps the image pre-puller's list (migrations/0047)
        "prepuller/most_used_images",
    ),
    PURGE: (
        "disks/purge_delete",
        "disks/purge_due",
        "disks/purge_try_lock",
        "disks/retention_live",
        "reconciler_runs/finish",
        "reconciler_runs/latest",
        "reconciler_runs/record",
        "reconciler_runs/start",
    ),
}
# Run by the migration function only, as the owner of the schema.
OWNER_ONLY = ("migrations/",)

_PLACEHOLDER = re.compile(r"%\((\w+)\)[sbt]|%[sbt]|%%")  # text, binary or either


def generic(statement: str) -> str:
    """psycopg's placeholders as PostgreSQL's ($1, $2...: one per distinct name)."""
    numbers: dict[str, int] = {}

    def replace(match: re.Match[str]) -> str:
        if match[0] == "%%":
            return "%"
        key = match[1] or f"#{len(numbers)}"
        numbers.setdefault(key, len(numbers) + 1)
        return f"${numbers[key]}"

    return _PLACEHOLDER.sub(replace, statement)


@pytest.fixture
def as_role(db: psycopg.Connection[Any]) -> Iterator[Any]:
    """`as_role(role)`: the rest of the test's transaction runs as that role."""

    def switch(role: str | None) -> psycopg.Connection[Any]:
        if role is None:
            db.execute("RESET ROLE")
        else:
            db.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
        return db

    yield switch


def refused(conn: psycopg.Connection[Any], statement: str) -> bool:
    """True when the statement is refused for lack of privilege (rolled back either way)."""
    try:
        with conn.transaction():
            conn.execute(sql.SQL(statement))  # type: ignore[arg-type]
    except errors.InsufficientPrivilege:
        return True
    return False


def test_every_named_statement_belongs_to_a_group_or_to_the_owner():
    claimed = {name for names in STATEMENTS.values() for name in names}
    unclaimed = [
        name
        for name in all_query_names()
        if name not in claimed and not name.startswith(OWNER_ONLY)
    ]
    assert unclaimed == [], f"grant these in a migration and list them here: {unclaimed}"


@pytest.mark.parametrize(
    ("role", "name"),
    [(role, name) for role, names in STATEMENTS.items() for name in names],
)
def test_each_group_may_run_every_statement_of_its_sql(as_role: Any, role: str, name: str):
    conn = as_role(role)
    conn.execute(sql.SQL("EXPLAIN (GENERIC_PLAN) ") + sql.SQL(generic(query(name))))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "statement",
    [
        query("reservations/get"),  # a table it may not read
        "UPDATE gpu_types SET is_active = false",  # a column it may not write
    ],
)
def test_the_check_sees_privileges_so_a_statement_outside_the_grants_fails_explained(
    as_role: Any, statement: str
):
    conn = as_role(RECONCILERS)
    with pytest.raises(errors.InsufficientPrivilege):
        conn.execute(sql.SQL("EXPLAIN (GENERIC_PLAN) ") + sql.SQL(generic(statement)))  # type: ignore[arg-type]


REFUSED: dict[str, tuple[str, ...]] = {
    API: (
        "DELETE FROM allocations",
        "SELECT * FROM allocations",
        "ALTER TABLE reservations ADD COLUMN extra integer",
        "CREATE TABLE extra (a integer)",
        "DELETE FROM reservations",
        "DELETE FROM users",
        "UPDATE reservations SET status = 'active'",
        "UPDATE reservations SET task_token = 'x'",
        "UPDATE users SET principal_arn = 'arn:aws:iam::1:user/x'",
        "UPDATE disks SET reservation_id = NULL",
        "UPDATE gpu_types SET available_gpus = 0",
        "INSERT INTO gpu_types (gpu_type) VALUES ('x')",
        "SELECT * FROM bus_events",
        "SELECT * FROM notification_deliveries",
        "SELECT * FROM reconciler_runs",
        "DELETE FROM reservation_events",
        "TRUNCATE reservations",
    ),
    LIFECYCLE: (
        "UPDATE notification_contacts SET webhook_ciphertext = NULL",
        "UPDATE notification_contacts SET email = 'x@example.com'",
        "DELETE FROM bus_events",
        "INSERT INTO bus_events (event_key, reservation_id, detail_type, detail)"
        " VALUES ('k', gen_random_uuid(), 'Reservation Ended', '{}')",
        "INSERT INTO reservations (reservation_id) VALUES (gen_random_uuid())",
        "DELETE FROM reservations",
        "UPDATE reservations SET duration_hours = 48",
        "UPDATE reservations SET user_id = 'someone'",
        "SELECT * FROM users",
        # the snapshot figures are the lifecycle's too since 0030; the volume EBS lists is not
        "UPDATE disks SET ebs_volume_id = 'vol-x'",
        "UPDATE disks SET is_deleted = false",
        "UPDATE disks SET disk_name = 'x'",
        "DELETE FROM disks",
        "UPDATE gpu_types SET available_gpus = 0",
        "DELETE FROM reconciler_runs",
        "DROP TABLE allocations",
        "ALTER TABLE allocations DROP CONSTRAINT allocations_pkey",
        "DELETE FROM reservation_events",
        'SELECT outbox_write(\'{"kind": "x"}\')',  # only the API writes jobs
    ),
    RECONCILERS: (
        "SELECT github_user FROM reservations",  # status, pod health, idle and image columns only
        "SELECT * FROM reservations",
        "UPDATE reservations SET status = 'failed'",
        "UPDATE reservations SET failure_reason = 'x'",  # the lifecycle ends it
        "DELETE FROM reservations",
        "SELECT * FROM users",
        "UPDATE gpu_types SET is_active = false",
        "UPDATE gpu_types SET max_gpus = 0",
        "DELETE FROM gpu_types",
        "UPDATE disks SET is_deleted = false",
        "UPDATE disks SET user_id = 'someone'",
        "UPDATE disks SET reservation_id = NULL",  # the holder is the lifecycle's
        "DELETE FROM disks",  # the purge's (migrations/0017)
        "DELETE FROM allocations",
        "SELECT * FROM cluster_nodes",
        "DELETE FROM reconciler_runs",
        "CREATE TABLE extra (a integer)",
        'SELECT outbox_write(\'{"kind": "x"}\')',
    ),
    PURGE: (
        "UPDATE disks SET is_deleted = false",  # a restore is the API's
        "UPDATE disks SET delete_date = NULL",
        "INSERT INTO disks (user_id, disk_name) VALUES ('x', 'y')",
        "SELECT * FROM reservations",
        "SELECT * FROM users",
        "UPDATE gpu_types SET available_gpus = 0",
        "DELETE FROM reconciler_runs",
    ),
}


@pytest.mark.parametrize("role", list(REFUSED))
def test_each_group_is_refused_what_lies_outside_its_grants(as_role: Any, role: str):
    conn = as_role(role)
    allowed = [statement for statement in REFUSED[role] if not refused(conn, statement)]
    assert allowed == [], f"{role} was not refused: {allowed}"


def _reservation_params(user: str) -> dict[str, Any]:
    return {
        "reservation_id": uuid.uuid4(),
        "username": user,
        "principal_arn": f"arn:aws:iam::123456789012:user/{user}",
        "client_request_id": str(uuid.uuid4()),
        "name": None,
        "gpu_type": "t4",
        "gpu_count": 1,
        "total_nodes": 1,
        "instance_type": "g4dn.12xlarge",
        "duration_hours": 2,
        "github_user": None,
        "disk_name": None,
        "jupyter_enabled": False,
        "profiling": False,
        "max_live_reservations": 4,
        "max_gpus": 32,
        "image": None,
        "image_digest": None,
        "image_pull": None,
        "preserve_entrypoint": False,
        "docker": False,
        "idle_timeout_minutes": None,
        "image_build": None,
    }


def test_the_api_role_submits_a_reservation_whose_trigger_records_its_first_event(
    as_role: Any,
):
    conn = as_role(API)
    params = _reservation_params("role-api")
    row = conn.execute(query("reservations/submit"), params).fetchone()
    assert row is not None
    events = conn.execute(
        query("reservations/events"),
        {"reservation_id": params["reservation_id"], "limit": 500, "offset": 0},
    ).fetchall()
    assert len(events) == 1
    disk = conn.execute(
        query("disks/request_create"),
        {"user_id": "role-api", "disk_name": "data", "size_gb": 100},
    ).fetchone()
    assert disk is not None
    # The outbox functions (migrations/0010) run with the API role's own grants.
    rid = params["reservation_id"]
    for name, arguments in [
        (
            "reservations/change",
            {
                "reservation_id": rid,
                "add_hours": 1,
                "github_user": "octocat",
                "remove_user": None,
                "jupyter_enabled": True,
                "seconds_per_hour": 3600,
            },
        ),
        ("reservations/request_cancel", {"reservation_id": rid, "reason": None}),
        ("disks/rename", {"user_id": "role-api", "disk_name": "data", "new_name": "work"}),
        ("disks/request_delete", {"user_id": "role-api", "disk_name": "work"}),
        ("disks/request_restore", {"user_id": "role-api", "disk_name": "work"}),
    ]:
        assert conn.execute(query(name), arguments).fetchone() is not None, name
    # a clone of a disk with no completed snapshot: nothing written, and nothing denied
    clone = {"user_id": "role-api", "source_name": "work", "disk_name": "copy"}
    assert conn.execute(query("disks/request_clone"), clone).fetchone() is None


def test_the_lifecycle_role_grants_changes_status_and_releases(as_role: Any):
    conn = as_role(None)
    params = _reservation_params("role-lifecycle")
    conn.execute(query("reservations/submit"), params)
    rid = params["reservation_id"]
    conn = as_role(LIFECYCLE)
    conn.execute(query("allocation/lock"))
    conn.execute(
        query("allocation/sync_nodes"),
        {
            "name": ["node-a"],
            "gpu_type": ["t4"],
            "slots": [4],
            "schedulable": [True],
            "node_ip": ["10.0.0.1"],
            "external_address": ["54.0.0.1"],
            "profiling": [False],
            "fabric": [""],
        },
    )
    conn.execute(
        query("allocation/grant"),
        {
            "node_name": ["node-a"],
            "slot": [0],
            "reservation_id": [rid],
            "rank": [0],
            "granted_at": datetime.now(UTC),
        },
    )
    changed = conn.execute(
        query("lifecycle/start"), {"reservation_id": rid, "execution_arn": "arn:x"}
    ).fetchone()
    assert changed is not None
    conn.execute(
        query("reservations/set_status"),
        {"reservation_id": rid, "status": "failed", "detail": "test"},
    )
    released = conn.execute(query("allocation/release"), {"reservation_id": rid}).fetchone()
    assert released == (1,)
    # the allocator's end of a queue whose capacity left: read (locked), then the ending
    conn.execute(
        query("allocation/capacity_gone"),
        {"multinode_types": ["h100"], "most_nodes": 4, "patience_seconds": 1800, "batch": 10},
    )
    conn.execute(query("lifecycle/progress"), {"reservation_id": rid, "detail": "pulling"})
    conn.execute(
        query("lifecycle/record_event"),
        {
            "reservation_id": rid,
            "kind": ["pod_log"],
            "detail": ["no log from pod p"],
            "event_key": ["pod_log"],
        },
    )


def test_the_reconciler_role_records_runs_updates_availability_and_imports_disks(
    as_role: Any,
):
    conn = as_role(RECONCILERS)
    run = conn.execute(
        query("reconciler_runs/start"), {"reconciler": "gpu_availability", "invoked_by": "test"}
    ).fetchone()
    assert run is not None
    conn.execute(
        query("gpu_types/update_availability"),
        {
            "updated_by": "test",
            "gpu_type": ["t4"],
            "total_cluster_gpus": [8],
            "available_gpus": [4],
            "max_reservable": [4],
            "full_nodes_available": [1],
            "running_instances": [2],
            "desired_capacity": [2],
            "max_per_node": [4],
            "max_nodes": [8],
        },
    )
    conn.execute(
        query("disk_reconciliation/import"),
        {
            "user_ids": ["role-reconciler"],
            "disk_names": ["data"],
            "volume_ids": ["vol-0123"],
            "sizes": [100],
            "snapshot_counts": [0],
            "backing_up": [False],
            "last_snapshots": [None],
        },
    )
    assert conn.execute(query("disk_reconciliation/rows")).fetchall()
