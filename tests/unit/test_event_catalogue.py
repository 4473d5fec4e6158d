"""The public events are named in three places that must agree: the layer's catalogue (what
the relay puts), the deployment's declaration (what rules match) and the versioned schema
(what operators build on), plus the table's CHECK (what the trigger may write)."""

from __future__ import annotations

import re
from pathlib import Path

import jsonschema

from cdk_app.declaration import DEPLOYMENT, EVENT_DETAIL_TYPES, EVENT_SOURCE
from gpudev.events.catalogue import DETAIL_TYPES, SCHEMA_VERSION, SOURCE, event_schema

ROOT = Path(__file__).resolve().parents[2]


def test_the_declaration_and_the_catalogue_name_the_same_events():
    assert (EVENT_SOURCE, EVENT_DETAIL_TYPES) == (SOURCE, DETAIL_TYPES)
    for rule in DEPLOYMENT.bus_rules:
        assert rule.source == SOURCE
        assert set(rule.detail_types) <= set(DETAIL_TYPES)


def test_the_schema_is_valid_and_names_every_detail_type_and_its_version():
    schema = event_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["source"] == {"const": SOURCE}
    assert tuple(schema["properties"]["detail-type"]["enum"]) == DETAIL_TYPES
    assert schema["$defs"]["common"]["properties"]["version"] == {"const": SCHEMA_VERSION}


def test_the_table_accepts_exactly_the_catalogued_detail_types():
    # The last migration that writes the CHECK decides (0039 made it, 0044 added Idle).
    migration = max(
        (
            p
            for p in (ROOT / "migrations").glob("*.sql")
            if "bus_events_detail_type_check CHECK (" in p.read_text()
        ),
        key=lambda p: p.name,
    ).read_text()
    check = migration.split("bus_events_detail_type_check CHECK (", 1)[1].split(")", 1)[0]
    named = set(re.findall(r"'([^']+)'", check))
    assert named == set(DETAIL_TYPES)


def test_a_detail_missing_what_its_type_requires_is_refused():
    event = {
        "source": SOURCE,
        "detail-type": "Reservation Ended",
        "detail": {
            "version": "1",
            "event_id": "x/ended",
            "reservation_id": "8d0c6f8e-9b7a-4c1e-8f3a-1f2e3d4c5b6a",
            "reservation_name": None,
            "user_id": "alice",
            "gpu_type": "h100",
            "gpu_count": 1,
            "status": "failed",
            "occurred_at": "2026-11-27T21:00:00.000000Z",
        },
    }
    validator = jsonschema.Draft202012Validator(event_schema())
    assert [e.message for e in validator.iter_errors(event)] == [
        "'ending' is a required property",
        "'reason' is a required property",
    ]
    event["detail"] |= {"ending": "failed", "reason": "the pod never became ready"}
    assert list(validator.iter_errors(event)) == []


def test_the_idle_warning_is_an_addition_to_version_1():
    """Reservation Idle is a detail-type of its own: a Reservation Warning keeps requiring
    exactly what it did, so existing consumers see no change (docs/decisions.md)."""
    schema = event_schema()
    assert "Reservation Idle" in DETAIL_TYPES and SCHEMA_VERSION == "1"
    assert schema["$defs"]["warning"]["required"] == ["minutes_left", "expires_at"]
    validator = jsonschema.Draft202012Validator(schema)
    event = {
        "source": SOURCE,
        "detail-type": "Reservation Idle",
        "detail": {
            "version": "1",
            "event_id": "x/idle/2026-11-27T21:00:00.000000Z",
            "reservation_id": "8d0c6f8e-9b7a-4c1e-8f3a-1f2e3d4c5b6a",
            "reservation_name": "train",
            "user_id": "alice",
            "gpu_type": "h100",
            "gpu_count": 1,
            "status": "active",
            "occurred_at": "2026-11-27T21:00:00.000000Z",
        },
    }
    assert sorted(e.message for e in validator.iter_errors(event)) == [
        "'ends_at' is a required property",
        "'expires_at' is a required property",
        "'idle_minutes' is a required property",
        "'warning' is a required property",
    ]
    event["detail"] |= {
        "idle_minutes": 120,
        "ends_at": "2026-11-27T21:30:00Z",
        "expires_at": "2026-11-28T01:00:00Z",
        "warning": "idle: its GPUs have not been used for 2 h",
    }
    assert list(validator.iter_errors(event)) == []
    event["detail"]["status"] = "expired"
    assert list(validator.iter_errors(event)) != []
