"""A function's handler run as Lambda runs it, against a test database: its module loaded
from `functions/<folder>/handler.py` with the environment a deployed function has (its pool
and settings fresh), its AWS clients replaced at the boundary."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_handler(folder: str, database_url: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The handler module of `functions/<folder>`, logging in to `database_url`; call
    `close_handler_pool()` when done."""
    from gpudev.db.pool import close_pool
    from gpudev.settings import reset_settings_cache

    for name, value in {
        "DATABASE_URL": database_url,
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    close_pool()
    reset_settings_cache()
    path = ROOT / "functions" / folder / "handler.py"
    spec = importlib.util.spec_from_file_location(f"{folder}_handler_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def close_handler_pool() -> None:
    from gpudev.db.pool import close_pool
    from gpudev.settings import reset_settings_cache

    close_pool()
    reset_settings_cache()


def lambda_context(function_name: str) -> Any:
    return SimpleNamespace(
        function_name=function_name,
        memory_limit_in_mb=512,
        invoked_function_arn=f"arn:aws:lambda:us-east-2:123456789012:function:{function_name}",
        aws_request_id="test-request",
    )


class Ec2ListingFails:
    """An EC2 client whose every listing (paginated or not) fails with InternalError."""

    def describe_snapshots(self, **_: Any) -> Any:
        self._fail("DescribeSnapshots")

    def describe_volumes(self, **_: Any) -> Any:
        self._fail("DescribeVolumes")

    def get_paginator(self, _: str) -> Any:
        return self

    def paginate(self, **_: Any) -> Any:
        self._fail("Describe")

    @staticmethod
    def _fail(operation: str) -> None:
        from botocore.exceptions import ClientError

        error = {"Error": {"Code": "InternalError", "Message": "boom"}}
        raise ClientError(error, operation)  # type: ignore[arg-type]
