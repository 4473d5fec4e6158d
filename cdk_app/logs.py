"""The dev pods' log group: what every dev pod prints, shipped by Fluent Bit
(deploy/kubernetes/fluent-bit.yaml) and read back by the API (`gpu-dev logs`, gpudev/logs/).

In the main stack, not the cluster stack: the API's read grant and the group belong
together, and the cluster stack exists only for teams that start from nothing. The main
stack already names the cluster (its access entries), so it also gives Fluent Bit's service
account its role through EKS Pod Identity.

- The group (POD_LOG_GROUP) keeps lines for `gpudev:podLogRetentionDays` (default 30) and
  is encrypted with a key of its own, which the CloudWatch Logs service may use for this
  group only (the encryption context names it). Kept when the stack is deleted.
- Fluent Bit's role (assumed by EKS Pod Identity for gpu-dev-logging/fluent-bit only) may
  create streams in and put events to this group, nothing else: not create groups, not
  read.
- The API reads it (declared with the API function: cdk_app/declaration.py)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, CfnOutput, RemovalPolicy, Stack
from aws_cdk import aws_eks as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs

from cdk_app.declaration import POD_LOG_GROUP

POD_LOG_RETENTION_CONTEXT = "gpudev:podLogRetentionDays"
DEFAULT_RETENTION_DAYS = 30
# Where deploy/kubernetes/fluent-bit.yaml runs Fluent Bit (a unit test keeps them in step).
SHIPPER_NAMESPACE = "gpu-dev-logging"
SHIPPER_SERVICE_ACCOUNT = "fluent-bit"
SHIPPER_ACTIONS = ("logs:CreateLogStream", "logs:PutLogEvents")
# CloudWatch Logs takes only these retention periods (days → CDK's name for it).
RETENTION_DAYS: dict[int, logs.RetentionDays] = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    120: logs.RetentionDays.FOUR_MONTHS,
    150: logs.RetentionDays.FIVE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
    1096: logs.RetentionDays.THREE_YEARS,
    1827: logs.RetentionDays.FIVE_YEARS,
    2192: logs.RetentionDays.SIX_YEARS,
    2557: logs.RetentionDays.SEVEN_YEARS,
    2922: logs.RetentionDays.EIGHT_YEARS,
    3288: logs.RetentionDays.NINE_YEARS,
    3653: logs.RetentionDays.TEN_YEARS,
}


@dataclass(frozen=True)
class PodLogs:
    group: logs.LogGroup
    key: kms.Key
    shipper_role: iam.Role


def retention_days(scope: Stack) -> int:
    raw = scope.node.try_get_context(POD_LOG_RETENTION_CONTEXT)
    value = DEFAULT_RETENTION_DAYS if raw is None else raw
    if isinstance(value, bool) or not str(value).strip().isdigit():
        raise ValueError(
            f"context {POD_LOG_RETENTION_CONTEXT}: a whole number of days; got {raw!r}"
        )
    days = int(str(value).strip())
    if days not in RETENTION_DAYS:
        allowed = ", ".join(str(d) for d in sorted(RETENTION_DAYS))
        raise ValueError(
            f"context {POD_LOG_RETENTION_CONTEXT}: {days} is not a retention CloudWatch Logs "
            f"takes; one of {allowed}"
        )
    return days


def build_pod_logs(scope: Stack, cluster_name: str) -> PodLogs:
    days = retention_days(scope)
    group_arn = f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:{POD_LOG_GROUP}"
    key = kms.Key(
        scope,
        "PodLogsKey",
        description=f"gpu-dev: the dev pods' log group {POD_LOG_GROUP}",
        enable_key_rotation=True,
        removal_policy=RemovalPolicy.RETAIN,  # the retained group's lines need it
    )
    key.add_to_resource_policy(
        iam.PolicyStatement(
            principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
            actions=[
                "kms:Encrypt*",
                "kms:Decrypt*",
                "kms:ReEncrypt*",
                "kms:GenerateDataKey*",
                "kms:Describe*",
            ],
            resources=["*"],  # in a key policy: this key
            conditions={"ArnEquals": {"kms:EncryptionContext:aws:logs:arn": group_arn}},
        )
    )
    group = logs.LogGroup(
        scope,
        "PodLogGroup",
        log_group_name=POD_LOG_GROUP,
        retention=RETENTION_DAYS[days],
        encryption_key=key,
        removal_policy=RemovalPolicy.RETAIN,
    )
    pods = iam.ServicePrincipal("pods.eks.amazonaws.com")
    role = iam.Role(
        scope,
        "PodLogShipperRole",
        assumed_by=pods,
        description="Fluent Bit (deploy/kubernetes/fluent-bit.yaml): writes the dev pods' lines",
    )
    role.assume_role_policy.add_statements(  # type: ignore[union-attr]
        iam.PolicyStatement(actions=["sts:TagSession"], principals=[pods])
    )
    role.add_to_policy(
        iam.PolicyStatement(actions=list(SHIPPER_ACTIONS), resources=[f"{group_arn}:*"])
    )
    eks.CfnPodIdentityAssociation(
        scope,
        "PodLogShipperIdentity",
        cluster_name=cluster_name,
        namespace=SHIPPER_NAMESPACE,
        service_account=SHIPPER_SERVICE_ACCOUNT,
        role_arn=role.role_arn,
    )
    CfnOutput(scope, "PodLogGroupName", value=group.log_group_name)
    return PodLogs(group, key, role)
