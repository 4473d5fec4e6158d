"""One schemathesis run against a local cloud's API, as the issue's run was made: the CLI
(`st run`) on the committed OpenAPI document, every operation, the checks below, every
request signed as the `gpu-dev` CLI signs it (signing.py). Used by test_contract.py (a
bounded run) and by `make contract` (a deep one); the JSON report gives the figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "docs" / "openapi.json"
CONFIG = Path(__file__).with_name("schemathesis.toml")
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
    "positive_data_acceptance",
    # use_after_free is not run: the only DELETE whose resource a read names is a disk's,
    # a soft delete by design (marked for deletion, restorable for 30 days; a read answers
    # 200 with `is_deleted` and `delete_date`), so the check can only flag that design. A
    # reservation is cancelled by POST; DELETE .../jupyter and .../users/{name} have no read.
    # A hard DELETE added later brings it back.
)
PHASES = ("examples", "coverage", "fuzzing", "stateful")


@dataclass(frozen=True)
class Outcome:
    returncode: int
    output: str
    report: dict[str, Any]

    @property
    def cases(self) -> int:
        """Requests schemathesis generated and sent, in every phase."""
        return int(self.report.get("test_cases", {}).get("generated", 0))

    @property
    def failures(self) -> int:
        return int(self.report.get("test_cases", {}).get("unique_failures", 0))

    @property
    def operations(self) -> int:
        return int(self.report.get("operations", {}).get("tested", 0))


def run_schemathesis(
    stack: dict[str, Any],
    report_dir: Path,
    max_examples: int,
    seed: int = 31,
    profile: str = "bob",
    phases: tuple[str, ...] = PHASES,
    timeout_seconds: float = 3600,
) -> Outcome:
    """`stack` is a local cloud's description (LocalCloud.describe())."""
    report = report_dir / "schemathesis.json"
    environment = {
        **os.environ,
        "SCHEMATHESIS_HOOKS": "tests.contract.signing",
        "CONTRACT_API_URL": stack["api_url"],
        "CONTRACT_REGION": stack["region"],
        "CONTRACT_CREDENTIALS_FILE": str(stack["credentials_file"]),
        "CONTRACT_PROFILE": profile,
        "PYTHONPATH": str(ROOT),
        "NO_COLOR": "1",
    }
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(CONFIG),
        "--no-color",
        "run",
        str(DOCUMENT),
        "--url",
        stack["api_url"],
        "--checks",
        ",".join(CHECKS),
        "--phases",
        ",".join(phases),
        "--max-examples",
        str(max_examples),
        "--seed",
        str(seed),
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--warnings",
        "off",
        "--report",
        "json",
        "--report-json-path",
        str(report),
    ]
    done = subprocess.run(
        command,
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout_seconds,
        check=False,
    )
    data = json.loads(report.read_text()) if report.exists() else {}
    return Outcome(done.returncode, done.stdout + done.stderr, data)
