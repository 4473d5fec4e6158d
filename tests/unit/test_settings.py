from __future__ import annotations

from collections.abc import Iterator

import pytest

from gpudev.settings import SettingsError, database_settings, reset_settings_cache


@pytest.fixture(autouse=True)
def _clean_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("DATABASE_URL", "DB_SECRET_ARN", "DB_HOST", "DB_IAM_USER", "DB_POOL_MAX_SIZE"):
        monkeypatch.delenv(name, raising=False)
    reset_settings_cache()
    yield
    reset_settings_cache()


def test_missing_database_location_fails_loudly_at_first_use():
    expected = "DATABASE_URL, DB_HOST with DB_IAM_USER, or DB_SECRET_ARN"
    with pytest.raises(SettingsError, match=expected):
        database_settings()


def test_an_invalid_value_names_the_variable(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://x/y")
    monkeypatch.setenv("DB_POOL_MAX_SIZE", "500")
    with pytest.raises(SettingsError, match="db_pool_max_size"):
        database_settings()


def test_settings_are_validated_once_per_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://x/y")
    first = database_settings()
    monkeypatch.setenv("DATABASE_URL", "postgresql://changed/y")
    assert database_settings() is first


def test_importing_the_layer_reads_no_settings():
    import importlib

    import gpudev.db.pool
    import gpudev.repositories

    importlib.reload(gpudev.db.pool)  # would raise if it touched settings at import
    assert gpudev.repositories.__all__


def test_the_api_needs_its_deployment_account_and_valid_allowed_roles(
    monkeypatch: pytest.MonkeyPatch,
):
    from gpudev.settings import api_settings

    monkeypatch.setenv("JOBS_QUEUE_URL", "https://sqs/jobs")
    monkeypatch.delenv("DEPLOYMENT_ACCOUNT_ID", raising=False)
    monkeypatch.delenv("ALLOWED_ROLES", raising=False)
    with pytest.raises(SettingsError, match="deployment_account_id"):
        api_settings()
    reset_settings_cache()
    monkeypatch.setenv("DEPLOYMENT_ACCOUNT_ID", "123456789012")
    monkeypatch.setenv("ALLOWED_ROLES", "aws-reserved/*/GpuDev")
    with pytest.raises(SettingsError, match=r"ApiSettings is invalid: .*\[path/\]RoleName"):
        api_settings()
    reset_settings_cache()
    monkeypatch.setenv("ALLOWED_ROLES", " aws-reserved/sso.amazonaws.com/AWSReservedSSO_X_* ,R ")
    assert [str(p) for p in api_settings().allowed_role_patterns] == [
        "aws-reserved/sso.amazonaws.com/AWSReservedSSO_X_*",
        "R",
    ]
    assert api_settings().profiling_role_patterns == ()  # unset: nobody may profile
    reset_settings_cache()
    monkeypatch.setenv("PROFILING_ROLES", "Perf,aws-reserved/*/X")
    with pytest.raises(SettingsError, match=r"ApiSettings is invalid: .*'aws-reserved/\*/X'"):
        api_settings()
    reset_settings_cache()
    monkeypatch.setenv("PROFILING_ROLES", "Perf")
    assert [str(p) for p in api_settings().profiling_role_patterns] == ["Perf"]


def test_the_sweeper_needs_the_jobs_queue_and_the_state_machine(monkeypatch: pytest.MonkeyPatch):
    from gpudev.settings import sweeper_settings

    monkeypatch.delenv("JOBS_QUEUE_URL", raising=False)
    monkeypatch.setenv("RESERVATION_STATE_MACHINE_ARN", "arn:aws:states:::stateMachine:m")
    with pytest.raises(SettingsError, match="SweeperSettings is invalid: JOBS_QUEUE_URL"):
        sweeper_settings()
    reset_settings_cache()
    monkeypatch.setenv("JOBS_QUEUE_URL", "https://sqs/jobs")
    monkeypatch.setenv("SWEEPER_PENDING_AFTER_SECONDS", "60")
    settings = sweeper_settings()
    assert settings.pending_after_seconds == 60 and settings.max_create_resends == 3


def test_a_snapshot_retention_that_keeps_nothing_is_refused(monkeypatch: pytest.MonkeyPatch):
    from gpudev.settings import disk_purge_settings

    assert disk_purge_settings().snapshot_retention == 3
    reset_settings_cache()
    monkeypatch.setenv("DISK_SNAPSHOT_RETENTION", "0")
    with pytest.raises(SettingsError, match="snapshot_retention"):
        disk_purge_settings()
    reset_settings_cache()


def test_the_save_patience_and_the_pod_patience_are_positive(monkeypatch: pytest.MonkeyPatch):
    from gpudev.settings import lifecycle_settings

    for name in ("LIFECYCLE_SAVE_PATIENCE_SECONDS", "LIFECYCLE_POD_RELEASE_PATIENCE_SECONDS"):
        reset_settings_cache()
        monkeypatch.setenv(name, "0")
        with pytest.raises(SettingsError, match=name.removeprefix("LIFECYCLE_").lower()):
            lifecycle_settings()
        monkeypatch.delenv(name)
    reset_settings_cache()
