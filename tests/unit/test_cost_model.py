"""The arithmetic of `bench/cost.py` (bench/support/cost_model.py): counts in, dollars out,
and the fixed resources read from a small template (tests/unit/fixtures/cost_template.json),
so a change of price, unit or template shape cannot break the bench's table silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.support.cost_model import (
    FixedResources,
    Run,
    Schedule,
    Usage,
    fixed_monthly_cost,
    invocations_per_month,
    linear_fit,
    read_fixed_resources,
    usage_cost,
)

TEMPLATE = json.loads((Path(__file__).parent / "fixtures" / "cost_template.json").read_text())


def test_each_operation_is_priced_at_its_us_east_2_list_price():
    cost = usage_cost(
        Usage(
            state_transitions=1_000,
            lambda_invocations=1_000_000,
            lambda_gb_seconds=1_000_000,
            sqs_requests=1_000_000,
            api_requests=1_000_000,
            log_bytes=1024**3,
            xray_traces=1_000_000,
            volume_gb_hours=730,
            bus_events=1_000_000,
            emails=1_000,
        )
    )
    assert cost == pytest.approx(
        {
            "Step Functions transitions": 0.025,
            "Lambda requests": 0.20,
            "Lambda duration": 13.3334,
            "SQS requests": 0.40,
            "API Gateway requests": 3.50,
            "CloudWatch Logs": 0.53,  # ingested, and kept a month
            "X-Ray traces": 5.00,
            "EBS volume (gp3)": 0.08,  # a GB for a month
            "EventBridge events": 1.00,
            "SES e-mails": 0.10,
        }
    )


def test_no_operations_cost_nothing():
    assert sum(usage_cost(Usage()).values()) == 0


def test_usage_adds_and_scales_field_by_field():
    one = Usage(state_transitions=2, log_bytes=10)
    assert one + one.scaled(2) == Usage(state_transitions=6, log_bytes=30)


def test_the_fit_splits_a_reservation_into_its_once_and_its_hourly_part():
    once, hourly = (
        Usage(state_transitions=40, volume_gb_hours=100),
        Usage(state_transitions=3, volume_gb_hours=1024),
    )
    short = once + hourly.scaled(1)
    long = once + hourly.scaled(3)

    fitted_once, fitted_hourly = linear_fit(short, 1, long, 3)

    assert fitted_once.state_transitions == pytest.approx(40)
    assert fitted_hourly.volume_gb_hours == pytest.approx(1024)


def test_the_fit_needs_two_different_lengths():
    with pytest.raises(ValueError, match="longer"):
        linear_fit(Usage(), 2, Usage(), 2)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [("rate(1 minute)", 43_800), ("rate(5 minutes)", 8_760), ("rate(1 day)", 730 / 24)],
)
def test_a_rate_is_invocations_in_a_pricing_month(expression, expected):
    assert invocations_per_month(expression) == pytest.approx(expected)


@pytest.mark.parametrize("expression", ["cron(0 12 * * ? *)", "rate(1 week)", "rate(minute)"])
def test_an_expression_that_is_not_a_rate_is_refused_not_guessed(expression):
    with pytest.raises(ValueError, match="not a rate"):
        invocations_per_month(expression)


def test_the_fixed_resources_are_read_from_the_template():
    fixed = read_fixed_resources(TEMPLATE)

    assert fixed.aurora_minimum_acu == 1.0  # two Serverless v2 instances; not the r6g
    assert (fixed.nat_gateways, fixed.public_ipv4_addresses) == (1, 1)
    assert fixed.interface_endpoint_azs == 2  # the gateway endpoint is free
    assert (fixed.kms_keys, fixed.alarms, fixed.dashboards, fixed.secrets) == (1, 2, 1, 1)
    assert (fixed.rds_proxies, fixed.eks_clusters) == (0, 0)
    # the disabled rule and the event pattern are no schedules; no MemorySize is 128 MB
    assert fixed.schedules == [
        Schedule("AllocatorFunction", 43_800, 1024),
        Schedule("PurgeFunction", pytest.approx(730 / 24), 128),
    ]


def test_an_empty_template_costs_nothing_a_month():
    assert sum(fixed_monthly_cost(read_fixed_resources({}), {}, 0).values()) == 0


def test_the_fixed_resources_are_priced_by_the_month():
    fixed = read_fixed_resources(TEMPLATE)
    runs = {"AllocatorFunction": Run(seconds=0.5, log_bytes=0)}

    monthly = fixed_monthly_cost(fixed, runs, custom_metrics=10)

    assert monthly["Aurora Serverless v2 minimum ACU"] == pytest.approx(1.0 * 0.12 * 730)
    assert monthly["NAT gateways"] == pytest.approx(0.045 * 730)
    assert monthly["Public IPv4 addresses"] == pytest.approx(0.005 * 730)
    assert monthly["Interface VPC endpoints"] == pytest.approx(2 * 0.01 * 730)
    assert monthly["KMS keys"] == 1.00
    assert monthly["CloudWatch alarms"] == pytest.approx(0.20)
    assert monthly["CloudWatch dashboards"] == 3.00
    assert monthly["CloudWatch custom metrics"] == pytest.approx(3.00)
    assert monthly["Secrets Manager secrets"] == pytest.approx(0.40)
    # 43,800 allocator runs of 0.5 s at 1 GB, each a request and a trace; the purge's runs
    # were not measured and cost their requests and traces only
    runs_a_month = 43_800 + 730 / 24
    expected = 43_800 * 0.5 * 0.0000133334 + runs_a_month * (0.20 + 5.00) / 1_000_000
    assert monthly["Scheduled functions (Lambda, X-Ray, logs)"] == pytest.approx(expected)


def test_a_proxy_and_a_cluster_would_be_counted():
    fixed = FixedResources(rds_proxies=1, eks_clusters=1)
    monthly = fixed_monthly_cost(fixed, {}, 0)
    assert monthly["RDS Proxy"] == pytest.approx(8 * 0.015 * 730)
    assert monthly["EKS control planes"] == pytest.approx(0.10 * 730)
