"""Idle reclaim's settings: the defaults agree in the layer's settings, the declaration
(CDK context → the API's and the updater's environment) and cdk.json; a bad value fails
loudly at first use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdk_app.declaration import API, AVAILABILITY_UPDATER, IDLE_RECLAIM, POD_IMAGE, PREPULLER
from gpudev.settings import IdleSettings, SettingsError, _load

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_agree_in_settings_declaration_and_cdk_json():
    settings = IdleSettings()
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    declared = {s.variable: (s.context_key, s.default) for s in IDLE_RECLAIM}
    assert declared == {
        "IDLE_TIMEOUT_DEFAULT_MINUTES": (
            "idleTimeoutDefaultMinutes",
            settings.timeout_default_minutes,
        ),
        "IDLE_TIMEOUT_MAX_MINUTES": ("idleTimeoutMaxMinutes", settings.timeout_max_minutes),
        "IDLE_GRACE_MINUTES": ("idleGraceMinutes", settings.grace_minutes),
        "IDLE_RECLAIM_POLICY": ("idleReclaimPolicy", settings.reclaim_policy),
    }
    assert {key: context[key] for key, _ in declared.values()} == dict(declared.values())


def test_the_api_and_the_updater_get_them():
    assert set(IDLE_RECLAIM) <= set(API.context_environment)
    # besides the image pre-puller's (PREPULLER, and the default image it pulls first)
    assert set(AVAILABILITY_UPDATER.context_environment) == set(IDLE_RECLAIM) | set(PREPULLER) | {
        POD_IMAGE
    }


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("IDLE_TIMEOUT_DEFAULT_MINUTES", "900"),  # over the maximum
        ("IDLE_TIMEOUT_MAX_MINUTES", "0"),
        ("IDLE_RECLAIM_POLICY", "h100=sometimes"),
    ],
)
def test_a_bad_value_fails_loudly(monkeypatch: pytest.MonkeyPatch, variable: str, value: str):
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match="IdleSettings is invalid"):
        _load(IdleSettings)
