"""`bench/cost.py` reads the stack's fixed monthly resources from its template: what it finds
in the real one, so a change in the stack (a second NAT gateway, an endpoint, a proxy, a
renamed function) shows in the bench's table and in this test, not silently."""

from __future__ import annotations

from bench.cost import logical_id_prefix
from bench.support.cost_model import read_fixed_resources
from cdk_app.declaration import DEPLOYMENT


def test_the_cost_bench_finds_every_fixed_resource_of_the_stack(template):
    fixed = read_fixed_resources(template.to_json())

    assert fixed.aurora_minimum_acu == 0.5
    assert (fixed.nat_gateways, fixed.public_ipv4_addresses) == (1, 1)
    assert (fixed.interface_endpoint_azs, fixed.rds_proxies, fixed.eks_clusters) == (0, 0, 0)
    # the alarm topic's, the pod log group's, the webhooks' seal, the image builds' logs
    assert fixed.kms_keys == 4
    assert fixed.alarms == len(template.find_resources("AWS::CloudWatch::Alarm")) > 0
    assert (fixed.dashboards, fixed.secrets) == (1, 1)


def test_every_schedule_is_priced_against_its_declared_function(template):
    """The bench times a scheduled function by its declared name and finds its schedule by
    the logical id CDK gives the function."""
    declared = {schedule.target for schedule in DEPLOYMENT.schedules}
    fixed = read_fixed_resources(template.to_json())
    matched = {
        name
        for schedule in fixed.schedules
        for name in declared
        if schedule.function.startswith(logical_id_prefix(name))
    }
    assert matched == declared
    assert len(fixed.schedules) == len(DEPLOYMENT.schedules)
