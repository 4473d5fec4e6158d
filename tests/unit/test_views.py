"""The API's views show what users may see of a row, and a column added to a row stays out
of them (and of the OpenAPI document) until someone adds it to the view's side on purpose:
each row extends the columns its owner sees (`DiskShown`, which `DiskView` is;
`ReservationShown`, which `ReservationView` is with two computed waits)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gpudev.disks.schemas import DiskView
from gpudev.models import Disk, DiskShown, Reservation, ReservationShown
from gpudev.reservations.schemas import ReservationView

OPENAPI = Path(__file__).parents[2] / "docs" / "openapi.json"
NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def _published(view: type[BaseModel]) -> set[str]:
    schemas = json.loads(OPENAPI.read_text())["components"]["schemas"]
    return set(schemas[view.__name__]["properties"])


def _disk(row: type[Disk] = Disk, **columns: Any) -> Disk:
    values: dict[str, Any] = dict.fromkeys(row.model_fields) | {
        "disk_id": uuid.uuid4(),
        "user_id": "alice",
        "disk_name": "work",
        "in_use": False,
        "is_deleted": False,
        "snapshot_count": 2,
        "pending_snapshot_count": 1,
        "is_backing_up": True,
        "created_at": NOW,
        "last_updated": NOW,
    }
    return row.model_validate(values | columns)


def test_the_disk_view_is_the_shown_columns_and_none_of_the_rows_own():
    own = set(Disk.model_fields) - set(DiskShown.model_fields)
    assert {"disk_id", "user_id", "ebs_volume_id", "tagged_name"} <= own
    # The volume its holder mounts is shown (issue #28): `disk show` prints it.
    assert "held_volume_id" in DiskShown.model_fields
    assert set(DiskView.model_fields) == set(DiskShown.model_fields) == _published(DiskView)
    shown = DiskView.of(_disk(ebs_volume_id="vol-1", tagged_name="old", lifecycle_error="slow"))
    assert shown.model_dump().keys() == DiskShown.model_fields.keys()
    assert (shown.disk_name, shown.snapshot_count, shown.lifecycle_error) == ("work", 2, "slow")


def test_a_column_added_to_the_disk_row_reaches_neither_the_view_nor_the_document():
    class DiskWithNewColumn(Disk):
        kms_key_arn: str

    row = _disk(DiskWithNewColumn, kms_key_arn="arn:aws:kms:secret")
    dumped = json.dumps(DiskView.of(row).model_dump(mode="json"))
    assert "kms_key_arn" not in dumped and "arn:aws:kms:secret" not in dumped
    assert "kms_key_arn" not in DiskView.model_json_schema()["properties"]


def test_the_reservation_view_is_the_shown_columns_and_two_computed_waits():
    own = set(Reservation.model_fields) - set(ReservationShown.model_fields)
    assert {"task_token", "execution_arn", "jupyter_token", "change_generation"} <= own
    computed = {"estimated_wait_minutes", "expires_in_minutes"}
    assert set(ReservationView.model_fields) == set(ReservationShown.model_fields) | computed
    assert set(ReservationView.model_fields) == _published(ReservationView)
    assert not own & _published(ReservationView)


def _reservation_row(**columns: Any) -> Reservation:
    values: dict[str, Any] = dict.fromkeys(Reservation.model_fields) | {
        "reservation_id": uuid.uuid4(),
        "user_id": "alice",
        "status": "active",
        "gpu_type": "h100",
        "gpu_count": 16,
        "total_nodes": 2,
        "duration_hours": 6.0,
        "jupyter_enabled": False,
        "profiling": False,
        "preserve_entrypoint": False,
        "docker": False,
        "secondary_users": [],
        "ssh_host_keys": [],
        "ssh_nodes": [],
        "keyless_users": [],
        "warnings_sent": [],
        "oom_count": 0,
        "pod_restarts": 0,
        "change_generation": 1,
        "applied_generation": 0,
        "namespace": "gpu-dev",
        "created_at": NOW,
        "updated_at": NOW,
    }
    return Reservation.model_validate(values | columns)


def test_an_active_reservations_expiry_follows_its_hours_before_the_checkpoint_applies_them():
    """An extension's reply says the new expiry at once: what ends the reservation is its
    launch plus its hours (the checkpoint moves `expires_at` to that within the bound)."""
    launched = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
    row = _reservation_row(launched_at=launched, expires_at=launched.replace(hour=16))
    view = ReservationView.of(row)
    assert view.expires_at == launched.replace(hour=18)
    queued = ReservationView.of(_reservation_row(status="queued", duration_hours=4.0))
    assert queued.expires_at is None


def test_the_view_carries_every_nodes_endpoint_and_the_keyless_users():
    nodes = [
        {"rank": 0, "node_ip": "54.1.1.1", "node_port": 30001, "node_address_kind": "external"},
        {"rank": 1, "node_ip": "54.1.1.2", "node_port": 30002, "node_address_kind": "external"},
    ]
    view = ReservationView.of(_reservation_row(ssh_nodes=nodes, keyless_users=["octocat"]))
    dumped = view.model_dump(mode="json")
    assert dumped["ssh_nodes"] == nodes and dumped["keyless_users"] == ["octocat"]
    assert {"ssh_nodes", "keyless_users"} <= _published(ReservationView)
