"""Reading synthesized CloudFormation templates: a function by its service name, cfn-lint."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Template


def function_of_service(template: Template, service_name: str) -> tuple[str, dict[str, Any]]:
    """The one Lambda function whose `POWERTOOLS_SERVICE_NAME` is `service_name`: its logical
    id and properties."""
    found = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Environment": {"Variables": {"POWERTOOLS_SERVICE_NAME": service_name}}}},
    )
    ((logical_id, function),) = found.items()
    return logical_id, function["Properties"]


def cfn_lint(template_file: Path) -> subprocess.CompletedProcess[str]:
    """cfn-lint (from this environment) over one template; W3005 (an explicit DependsOn the
    references already imply) is left out."""
    return subprocess.run(
        [
            str(Path(sys.executable).with_name("cfn-lint")),
            "--ignore-checks",
            "W3005",
            "--",
            str(template_file),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
