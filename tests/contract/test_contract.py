"""The API answers as docs/openapi.json says: schemathesis, every operation, a bounded number
of examples each (`make contract` runs many more), 0 failures."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from localcloud.stack import LocalCloud
from tests.contract.run import ROOT, run_schemathesis

# Examples per operation in the fuzzing phase; the examples, coverage and stateful phases
# add their own (the coverage phase's boundary and negative cases are most of the run).
MAX_EXAMPLES = int(os.environ.get("CONTRACT_MAX_EXAMPLES", "5"))
DOCUMENT = json.loads((ROOT / "docs" / "openapi.json").read_text())
OPERATIONS = sum(len(operations) for operations in DOCUMENT["paths"].values())


@pytest.mark.slow
def test_every_operation_answers_as_the_openapi_document_says(
    local_cloud: LocalCloud, tmp_path: Path
) -> None:
    outcome = run_schemathesis(local_cloud.describe(), tmp_path, MAX_EXAMPLES)
    print(f"schemathesis: {outcome.cases} cases, {outcome.failures} failures")
    assert outcome.returncode == 0, outcome.output[-20000:]
    assert outcome.operations == OPERATIONS and outcome.cases > 0, outcome.output[-5000:]
