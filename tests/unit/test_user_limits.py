"""Per-user limits: the messages at each limit, and one default everywhere it is stated
(the layer's settings, the deployment declaration, cdk.json)."""

from __future__ import annotations

import json
from pathlib import Path

from cdk_app.declaration import API, REQUEST_RATE, USER_LIMITS
from gpudev.models import Usage, UserLimits
from gpudev.reservations.limits import refusal
from gpudev.settings import RateLimitSettings, UserLimitSettings

ROOT = Path(__file__).resolve().parents[2]
LIMITS = UserLimits(max_live_reservations=4, max_gpus=32)


def test_under_both_limits_nothing_is_refused():
    assert refusal(LIMITS, Usage(3, 24), 8) is None
    assert refusal(LIMITS, Usage(0, 0), 32) is None


def test_the_reservation_limit_states_limit_and_usage():
    refused = refusal(LIMITS, Usage(4, 4), 1)
    assert refused is not None and refused.message == (
        "you have 4 live reservations, the limit is 4; "
        "cancel one with `gpu-dev cancel` or wait for one to end"
    )
    one = refusal(UserLimits(1, 32), Usage(1, 1), 1)
    assert one is not None and one.message.startswith("you have 1 live reservation, the limit")


def test_the_gpu_limit_states_the_request_the_usage_and_the_limit():
    refused = refusal(LIMITS, Usage(2, 28), 8)
    assert refused is not None and refused.message == (
        "this request needs 8 GPUs and your live reservations already hold or queue 28; "
        "the limit is 32 GPUs per user; cancel one with `gpu-dev cancel` or wait for one to end"
    )


def test_a_request_over_the_gpu_limit_by_itself_asks_for_fewer():
    refused = refusal(UserLimits(4, 16), Usage(0, 0), 24)
    assert refused is not None and refused.message.endswith("ask for fewer GPUs")


def test_defaults_agree_in_settings_declaration_and_cdk_json():
    settings = UserLimitSettings()
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    declared = {s.variable: (s.context_key, s.default) for s in USER_LIMITS}
    assert declared == {
        "MAX_LIVE_RESERVATIONS_PER_USER": (
            "maxLiveReservationsPerUser",
            settings.max_live_reservations_per_user,
        ),
        "MAX_GPUS_PER_USER": ("maxGpusPerUser", settings.max_gpus_per_user),
    }
    assert {key: context[key] for key, _ in declared.values()} == dict(declared.values())
    assert API.context_environment[: len(USER_LIMITS)] == USER_LIMITS


def test_request_rate_defaults_agree_in_settings_declaration_and_cdk_json():
    settings = RateLimitSettings()
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    declared = {s.variable: (s.context_key, s.default) for s in REQUEST_RATE}
    assert declared == {
        "API_REQUESTS_PER_MINUTE": ("apiRequestsPerMinute", settings.api_requests_per_minute),
        "API_REQUEST_BURST": ("apiRequestBurst", settings.api_request_burst),
    }
    assert {key: context[key] for key, _ in declared.values()} == dict(declared.values())
    limits = USER_LIMITS + REQUEST_RATE
    assert API.context_environment[: len(limits)] == limits
