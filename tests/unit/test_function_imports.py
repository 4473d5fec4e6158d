"""Cold starts pay for what a function imports: heavy modules only where they are used
(bench/cold_start.py measures the imports)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("function", "must_not_import"),
    [
        ("api", "kubernetes"),
        # The API's import: the tracer is made at the first invocation (gpudev.observability
        # LazyTracer), each route imports its service, the database and AWS clients when
        # a request needs them.
        ("api", "aws_xray_sdk"),
        ("api", "psycopg"),
        ("api", "psycopg_pool"),
        ("api", "botocore.client"),
        ("api", "boto3"),
        ("api", "requests"),
        ("api", "gpudev.repositories"),
        ("disk_reconciler", "kubernetes"),
        ("migrate", "kubernetes"),
        ("availability_updater", "kubernetes"),  # imported lazily, at its first cluster call
        ("availability_updater", "aws_xray_sdk"),  # no function patches at import
    ],
)
def test_functions_do_not_import_heavy_modules_they_do_not_need(function, must_not_import):
    folder = str(ROOT / "functions" / function)
    code = (
        f"import sys; sys.path.insert(0, {folder!r}); import handler; "
        f"print({must_not_import!r} in sys.modules)"
    )
    # As in Lambda: with LAMBDA_TASK_ROOT set, powertools' Tracer is on and patches.
    environment = os.environ | {"LAMBDA_TASK_ROOT": folder, "AWS_REGION": "us-east-2"}
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=environment,
    )
    assert result.stdout.strip() == "False"


def test_function_folders_share_no_top_level_module_name():
    """Each function's folder is its task root in Lambda; the local cloud puts them all on
    one sys.path, so a second `routes` would shadow the first (handlers load by path)."""
    owner: dict[str, str] = {}
    for folder in sorted(p for p in (ROOT / "functions").iterdir() if p.is_dir()):
        for entry in folder.iterdir():
            name = entry.stem
            if name in {"handler", "__pycache__"}:
                continue
            assert name not in owner, f"{name} is in both {owner[name]} and {folder.name}"
            owner[name] = folder.name
