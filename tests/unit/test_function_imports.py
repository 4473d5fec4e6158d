"""Cold starts pay for what a function imports: heavy modules only where they are used."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("function", "must_not_import"),
    [
        ("api", "kubernetes"),
        ("disk_reconciler", "kubernetes"),
        ("migrate", "kubernetes"),
        ("availability_updater", "kubernetes"),  # imported lazily, at its first cluster call
    ],
)
def test_functions_do_not_import_heavy_modules_they_do_not_need(function, must_not_import):
    folder = str(ROOT / "functions" / function)
    code = (
        f"import sys; sys.path.insert(0, {folder!r}); import handler; "
        f"print({must_not_import!r} in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert result.stdout.strip() == "False"
