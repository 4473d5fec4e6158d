"""cdk-nag AwsSolutions acknowledgements, each with the reason we accept the finding.

Acknowledged on the stack, so a new construct that trips one of these rules is covered
only if the same reason holds: review this list when adding resources.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, Stack, Validations

_MANAGED = "arn:<AWS::Partition>:iam::aws:policy/service-role"

ACKNOWLEDGED: dict[str, str] = {
    f"AwsSolutions::AwsSolutions-IAM4[Policy::{_MANAGED}/AWSLambdaBasicExecutionRole]": (
        "The AWS managed basic execution policy grants only CloudWatch Logs writes, which "
        "every function needs; a copy of it would drift from AWS's maintained version."
    ),
    f"AwsSolutions::AwsSolutions-IAM4[Policy::{_MANAGED}/AWSLambdaVPCAccessExecutionRole]": (
        "VPC functions need ENI management; AWS maintains the minimal action set."
    ),
    "AwsSolutions::AwsSolutions-IAM5[Resource::*]": (
        "X-Ray PutTraceSegments/PutTelemetryRecords (active tracing) support no resource-level "
        "permissions; every other grant in the stack is scoped to a resource ARN."
    ),
    "AwsSolutions::AwsSolutions-L1": (
        "Functions run Python 3.12 on purpose: the layer's wheels are built for cp312 and the "
        "runtime is a project decision (docs/decisions.md); upgrading is a deliberate change."
    ),
    "AwsSolutions::AwsSolutions-SMG4": (
        "Aurora credentials are read at cold start into a pooled connection; rotation waits "
        "for reconnect-on-auth-failure in the pool (tracked in docs/decisions.md)."
    ),
}


def acknowledge_findings(stack: Stack) -> None:
    Validations.of(stack).acknowledge(
        *(Acknowledgment(id=rule, reason=reason) for rule, reason in ACKNOWLEDGED.items())
    )
