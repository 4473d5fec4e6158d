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
