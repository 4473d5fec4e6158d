"""What the control plane costs, from counts: the pure arithmetic of `bench/cost.py`.

Two halves. A reservation's usage (state transitions, Lambda invocations and GB-seconds,
SQS and API requests, log bytes, traces, EBS volume hours) is measured on the local cloud
and turned into dollars with `usage_cost`. The fixed monthly resources (the database's
minimum capacity, NAT gateways, endpoints, keys, alarms, schedules ...) are read from the
synthesized CloudFormation template with `read_fixed_resources` and priced with
`fixed_monthly_cost`.

Prices are the public on-demand list prices of us-east-2 (US East, Ohio), taken from the
named AWS pricing pages; where a page was not at hand the figure is the well-known list
price, marked "(list price)". Free tiers are left out: at scale they do not matter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

HOURS_PER_MONTH = 730.0  # AWS's pricing month
GB = 1024**3

# -- prices, us-east-2 ------------------------------------------------------------------
# "AWS Step Functions Pricing", Standard workflows: per state transition.
STEP_FUNCTIONS_PER_TRANSITION = 0.025 / 1_000
# "AWS Lambda Pricing", Arm (Graviton2): per GB-second of duration, per request.
LAMBDA_ARM_PER_GB_SECOND = 0.0000133334
LAMBDA_PER_REQUEST = 0.20 / 1_000_000
# "Amazon SQS Pricing", standard queue: per request (each 64 KB chunk of a payload).
SQS_PER_REQUEST = 0.40 / 1_000_000
# "Amazon API Gateway Pricing", REST APIs: per request, first 333 million a month.
API_GATEWAY_REST_PER_REQUEST = 3.50 / 1_000_000
# "Amazon CloudWatch Pricing": Logs ingestion per GB (vended logs of Step Functions and
# flow logs: the same first tier), storage per GB-month, a custom metric per month,
# a standard-resolution alarm per month, a dashboard per month.
CLOUDWATCH_LOGS_PER_GB_INGESTED = 0.50
CLOUDWATCH_LOGS_PER_GB_MONTH_STORED = 0.03
CLOUDWATCH_PER_METRIC_MONTH = 0.30
CLOUDWATCH_PER_ALARM_MONTH = 0.10
CLOUDWATCH_PER_DASHBOARD_MONTH = 3.00
# "Amazon EventBridge Pricing": custom events put on a bus, per event (each 64 KB chunk).
EVENTBRIDGE_PER_EVENT = 1.00 / 1_000_000
# "Amazon SES Pricing": per e-mail sent (outbound, not from EC2).
SES_PER_EMAIL = 0.10 / 1_000
# "Amazon EFS Pricing", Standard storage per GB-month; Elastic Throughput reads and writes
# per GB (a file system alone costs nothing: it is billed by what it holds and moves).
EFS_STANDARD_PER_GB_MONTH = 0.30
EFS_ELASTIC_READ_PER_GB = 0.03
EFS_ELASTIC_WRITE_PER_GB = 0.06
# "AWS X-Ray Pricing": per trace recorded.
XRAY_PER_TRACE = 5.00 / 1_000_000
# "Amazon EBS Pricing": gp3 storage per GB-month; standard snapshot storage per GB-month.
EBS_GP3_PER_GB_MONTH = 0.08
EBS_SNAPSHOT_PER_GB_MONTH = 0.05
# "Amazon Aurora Pricing", Aurora Serverless v2 (Aurora Standard): per ACU-hour (list price).
AURORA_SERVERLESS_V2_PER_ACU_HOUR = 0.12
# "Amazon RDS Proxy Pricing": per ACU-hour of the Serverless v2 target, at least 8 ACU.
RDS_PROXY_PER_ACU_HOUR = 0.015
RDS_PROXY_MINIMUM_ACU = 8
# "Amazon VPC Pricing": a NAT gateway per hour; a public IPv4 address per hour; an interface
# endpoint per hour in each Availability Zone.
NAT_GATEWAY_PER_HOUR = 0.045
PUBLIC_IPV4_PER_HOUR = 0.005
INTERFACE_ENDPOINT_PER_AZ_HOUR = 0.01
# "AWS Key Management Service Pricing": a customer managed key per month.
KMS_KEY_PER_MONTH = 1.00
# "AWS Secrets Manager Pricing": a secret per month.
SECRET_PER_MONTH = 0.40
# "Amazon EKS Pricing": a cluster's control plane per hour (standard support).
EKS_CLUSTER_PER_HOUR = 0.10

RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")
MINUTES = {"minute": 1, "hour": 60, "day": 1_440}


@dataclass
class Usage:
    """Billable operations: of one reservation, or of one of its hours."""

    state_transitions: float = 0.0
    lambda_invocations: float = 0.0
    lambda_gb_seconds: float = 0.0
    sqs_requests: float = 0.0
    api_requests: float = 0.0
    log_bytes: float = 0.0  # the functions' logs, Lambda's own lines, the state machine's
    xray_traces: float = 0.0
    volume_gb_hours: float = 0.0  # the disk's gp3 volume while the reservation holds it
    bus_events: float = 0.0  # its lifecycle events put on the bus gpu-dev (PutEvents entries)
    emails: float = 0.0  # notifications mailed through SES

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    def scaled(self, factor: float) -> Usage:
        return Usage(**{f.name: getattr(self, f.name) * factor for f in fields(self)})


def usage_cost(usage: Usage) -> dict[str, float]:
    """Dollars per line of the bill; logs are ingested once and kept a month."""
    log_gb = usage.log_bytes / GB
    return {
        "Step Functions transitions": usage.state_transitions * STEP_FUNCTIONS_PER_TRANSITION,
        "Lambda requests": usage.lambda_invocations * LAMBDA_PER_REQUEST,
        "Lambda duration": usage.lambda_gb_seconds * LAMBDA_ARM_PER_GB_SECOND,
        "SQS requests": usage.sqs_requests * SQS_PER_REQUEST,
        "API Gateway requests": usage.api_requests * API_GATEWAY_REST_PER_REQUEST,
        "CloudWatch Logs": log_gb
        * (CLOUDWATCH_LOGS_PER_GB_INGESTED + CLOUDWATCH_LOGS_PER_GB_MONTH_STORED),
        "X-Ray traces": usage.xray_traces * XRAY_PER_TRACE,
        "EBS volume (gp3)": usage.volume_gb_hours * EBS_GP3_PER_GB_MONTH / HOURS_PER_MONTH,
        "EventBridge events": usage.bus_events * EVENTBRIDGE_PER_EVENT,
        "SES e-mails": usage.emails * SES_PER_EMAIL,
    }


def linear_fit(
    short: Usage, short_hours: float, long: Usage, long_hours: float
) -> tuple[Usage, Usage]:
    """A reservation's usage as a part every reservation costs plus a part per hour, from
    the mean usage of reservations of two lengths."""
    if long_hours <= short_hours:
        raise ValueError("the long reservations must be longer than the short ones")
    per_hour = (long + short.scaled(-1)).scaled(1 / (long_hours - short_hours))
    return short + per_hour.scaled(-short_hours), per_hour


# -- the fixed resources, from the template ----------------------------------------------
@dataclass
class Schedule:
    function: str  # the target function's logical id
    invocations_per_month: float
    memory_mb: int


@dataclass
class FixedResources:
    aurora_minimum_acu: float = 0.0  # summed over the Serverless v2 instances
    rds_proxies: int = 0
    nat_gateways: int = 0
    public_ipv4_addresses: int = 0  # Elastic IPs (the NAT gateways')
    interface_endpoint_azs: int = 0  # interface endpoints × their subnets
    kms_keys: int = 0
    alarms: int = 0
    dashboards: int = 0
    secrets: int = 0
    eks_clusters: int = 0
    schedules: list[Schedule] = field(default_factory=list)


def _resources(template: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r for r in template.get("Resources", {}).values() if r.get("Type") == kind]


def invocations_per_month(expression: str) -> float:
    """`rate(N unit)` as invocations in a pricing month; other expressions are refused."""
    match = RATE.fullmatch(expression.strip())
    if not match:
        raise ValueError(f"not a rate expression: {expression!r}")
    minutes = int(match[1]) * MINUTES[match[2].rstrip("s")]
    return HOURS_PER_MONTH * 60 / minutes


def read_fixed_resources(template: Mapping[str, Any]) -> FixedResources:
    """What a synthesized template keeps running whether anyone reserves or not."""
    clusters = {
        logical: r
        for logical, r in template.get("Resources", {}).items()
        if r.get("Type") == "AWS::RDS::DBCluster"
    }
    minimum_acu = 0.0
    for instance in _resources(template, "AWS::RDS::DBInstance"):
        properties = instance.get("Properties", {})
        if properties.get("DBInstanceClass") != "db.serverless":
            continue
        cluster = clusters[properties["DBClusterIdentifier"]["Ref"]]
        scaling = cluster["Properties"]["ServerlessV2ScalingConfiguration"]
        minimum_acu += float(scaling["MinCapacity"])
    functions = {
        logical: r["Properties"]
        for logical, r in template.get("Resources", {}).items()
        if r.get("Type") == "AWS::Lambda::Function"
    }
    schedules = []
    for rule in _resources(template, "AWS::Events::Rule"):
        properties = rule.get("Properties", {})
        if "ScheduleExpression" not in properties or properties.get("State") == "DISABLED":
            continue
        for target in properties.get("Targets", []):
            logical = target["Arn"].get("Fn::GetAtt", [None])[0]
            if logical in functions:
                schedules.append(
                    Schedule(
                        logical,
                        invocations_per_month(properties["ScheduleExpression"]),
                        int(functions[logical].get("MemorySize", 128)),
                    )
                )
    endpoints = [
        r.get("Properties", {})
        for r in _resources(template, "AWS::EC2::VPCEndpoint")
        if r.get("Properties", {}).get("VpcEndpointType") == "Interface"
    ]
    return FixedResources(
        aurora_minimum_acu=minimum_acu,
        rds_proxies=len(_resources(template, "AWS::RDS::DBProxy")),
        nat_gateways=len(_resources(template, "AWS::EC2::NatGateway")),
        public_ipv4_addresses=len(_resources(template, "AWS::EC2::EIP")),
        interface_endpoint_azs=sum(len(e.get("SubnetIds", [])) for e in endpoints),
        kms_keys=len(_resources(template, "AWS::KMS::Key")),
        alarms=len(_resources(template, "AWS::CloudWatch::Alarm")),
        dashboards=len(_resources(template, "AWS::CloudWatch::Dashboard")),
        secrets=len(_resources(template, "AWS::SecretsManager::Secret")),
        eks_clusters=len(_resources(template, "AWS::EKS::Cluster")),
        schedules=schedules,
    )


@dataclass(frozen=True)
class Run:
    """One invocation of a scheduled function, on average (measured)."""

    seconds: float
    log_bytes: float


def fixed_monthly_cost(
    fixed: FixedResources,
    scheduled_runs: Mapping[str, Run],
    custom_metrics: int,
) -> dict[str, float]:
    """Dollars a month for what runs whether anyone reserves or not. `scheduled_runs`: each
    scheduled function's mean run (by logical id), for the schedules' Lambda, X-Ray and
    log bill; `custom_metrics`: the distinct metrics the functions emit."""
    scheduled = Usage()
    for schedule in fixed.schedules:
        run = scheduled_runs.get(schedule.function, Run(0.0, 0.0))
        count = schedule.invocations_per_month
        scheduled += Usage(
            lambda_invocations=count,
            lambda_gb_seconds=count * run.seconds * schedule.memory_mb / 1024,
            xray_traces=count,
            log_bytes=count * run.log_bytes,
        )
    scheduled_cost = usage_cost(scheduled)
    month = HOURS_PER_MONTH
    return {
        "Aurora Serverless v2 minimum ACU": fixed.aurora_minimum_acu
        * AURORA_SERVERLESS_V2_PER_ACU_HOUR
        * month,
        "RDS Proxy": fixed.rds_proxies * RDS_PROXY_MINIMUM_ACU * RDS_PROXY_PER_ACU_HOUR * month,
        "NAT gateways": fixed.nat_gateways * NAT_GATEWAY_PER_HOUR * month,
        "Public IPv4 addresses": fixed.public_ipv4_addresses * PUBLIC_IPV4_PER_HOUR * month,
        "Interface VPC endpoints": fixed.interface_endpoint_azs
        * INTERFACE_ENDPOINT_PER_AZ_HOUR
        * month,
        "KMS keys": fixed.kms_keys * KMS_KEY_PER_MONTH,
        "CloudWatch alarms": fixed.alarms * CLOUDWATCH_PER_ALARM_MONTH,
        "CloudWatch dashboards": fixed.dashboards * CLOUDWATCH_PER_DASHBOARD_MONTH,
        "CloudWatch custom metrics": custom_metrics * CLOUDWATCH_PER_METRIC_MONTH,
        "Secrets Manager secrets": fixed.secrets * SECRET_PER_MONTH,
        "EKS control planes": fixed.eks_clusters * EKS_CLUSTER_PER_HOUR * month,
        "Scheduled functions (Lambda, X-Ray, logs)": sum(scheduled_cost.values()),
    }
