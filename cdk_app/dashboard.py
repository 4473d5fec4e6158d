"""The operators' CloudWatch dashboard, `gpu-dev`: one page answering "is gpu-dev healthy and
how busy is it". AWS metrics where AWS has them (API Gateway, Step Functions, SQS, Lambda);
the functions' EMF metrics (namespace METRICS_NAMESPACE, dimension `service`) for the rest.

GPU figures are per type without naming the types here: a SEARCH expression draws one line
per `gpu_type` dimension the availability updater emits, so a new type appears by itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration, Stack
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from cdk_app.declaration import METRICS_NAMESPACE, POD_LOG_GROUP

DASHBOARD_NAME = "gpu-dev"
PERIOD = Duration.minutes(1)
# What a failed start or a crash printed, across every dev pod: the newest lines that say so.
POD_TROUBLE_QUERY = (
    "fields @timestamp, @logStream, @message",
    "filter @message like /(?i)(error|fail|denied|not found|killed|no space)/",
    "sort @timestamp desc",
    "limit 50",
)
WIDTH = 12  # two widgets per row (the grid is 24 wide)


def _search(metric_name: str, statistic: str, label: str) -> cloudwatch.MathExpression:
    """One line per GPU type: `{namespace,gpu_type,service}` are the EMF dimensions."""
    return cloudwatch.MathExpression(
        expression=(
            f"SEARCH('{{{METRICS_NAMESPACE},gpu_type,service}} "
            f"MetricName=\"{metric_name}\"', '{statistic}', 60)"
        ),
        label=label,
        period=PERIOD,
        using_metrics={},
    )


def _emf(metric_name: str, service: str, statistic: str = "Sum") -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={"service": service},
        statistic=statistic,
        period=PERIOD,
        label=metric_name,
    )


def build_dashboard(
    scope: Construct,
    *,
    rest_api: apigateway.RestApi,
    functions: Mapping[str, lambda_.IFunction],
    state_machines: Sequence[sfn.StateMachine],
    dead_letter_queues: Sequence[sqs.IQueue],
    allocator: str,
    availability_updater: str,
    reconcilers: Sequence[str],
) -> cloudwatch.Dashboard:
    """`functions` maps deployed names to functions; `allocator`, `availability_updater` and
    `reconcilers` are deployed names (the EMF `service` dimension is the deployed name)."""
    dashboard = cloudwatch.Dashboard(scope, "Dashboard", dashboard_name=DASHBOARD_NAME)
    graph = cloudwatch.GraphWidget
    dashboard.add_widgets(
        cloudwatch.TextWidget(
            markdown=(
                "# gpu-dev\nGPUs by type come from the availability updater (every minute); "
                "queue figures from the allocator's passes. Runbooks, alarms and dead letters: "
                "`docs/operator-guide.md`."
            ),
            width=24,
            height=2,
        ),
        graph(
            title="GPUs available, by type",
            left=[_search("GpusAvailable", "Minimum", "available")],
            width=WIDTH,
        ),
        graph(
            title="GPUs in use, by type",
            left=[_search("GpusInUse", "Maximum", "in use")],
            width=WIDTH,
        ),
        graph(
            # Held: granted to reservations; used: of those, busy per the DCGM exporters
            # (gpudev/utilisation/; docs/utilisation.md). The gap is what idle reclaim targets.
            title="GPUs held vs used, by type",
            left=[
                _search("GpusInUse", "Maximum", "held"),
                _search("GpusUsed", "Maximum", "used"),
            ],
            width=WIDTH,
        ),
        graph(
            title="Queue: reservations waiting, and grants per minute",
            left=[_emf("Queued", allocator, "Maximum")],
            right=[_emf("Granted", allocator)],
            width=WIDTH,
        ),
        graph(
            title="Queue wait of granted reservations (seconds)",
            left=[
                _emf("QueueWaitSeconds", allocator, statistic)
                for statistic in ("p50", "p90", "Maximum")
            ],
            width=WIDTH,
        ),
        graph(
            title="Reservation executions",
            left=[
                machine.metric_started(period=PERIOD, statistic="Sum", label=f"{label} started")
                for machine, label in _labelled(state_machines)
            ],
            right=[
                metric(period=PERIOD, statistic="Sum", label=f"{label} {outcome}")
                for machine, label in _labelled(state_machines)
                for outcome, metric in (
                    ("failed", machine.metric_failed),
                    ("timed out", machine.metric_timed_out),
                    ("aborted", machine.metric_aborted),
                )
            ],
            width=WIDTH,
        ),
        graph(
            title="Dead-letter queues (messages waiting)",
            left=[
                queue.metric_approximate_number_of_messages_visible(
                    period=PERIOD, statistic="Maximum"
                )
                for queue in dead_letter_queues
            ],
            width=WIDTH,
        ),
        graph(
            title="API latency (ms)",
            left=[
                rest_api.metric_latency(period=PERIOD, statistic=statistic, label=statistic)
                for statistic in ("p50", "p90", "p99")
            ],
            width=WIDTH,
        ),
        graph(
            title="API errors",
            left=[
                rest_api.metric_client_error(period=PERIOD, statistic="Sum", label="4xx"),
                rest_api.metric_server_error(period=PERIOD, statistic="Sum", label="5xx"),
            ],
            right=[rest_api.metric_count(period=PERIOD, statistic="Sum", label="requests")],
            width=WIDTH,
        ),
        graph(
            title="Reconciler runs skipped (another run held the lock)",
            left=[_emf("RunSkipped", name) for name in reconcilers],
            right=[
                _emf("KubernetesReachable", availability_updater, "Minimum"),
                _emf("PodHealthEndings", availability_updater),
            ],
            width=WIDTH,
        ),
        _pod_logs_text(scope),
        cloudwatch.LogQueryWidget(
            title="Dev pods: recent lines that say something went wrong",
            log_group_names=[POD_LOG_GROUP],
            query_lines=list(POD_TROUBLE_QUERY),
            width=WIDTH,
        ),
        graph(
            title="Function errors",
            left=[
                function.metric_errors(period=PERIOD, statistic="Sum", label=name)
                for name, function in sorted(functions.items())
            ],
            width=WIDTH,
        ),
    )
    return dashboard


def _pod_logs_text(scope: Construct) -> cloudwatch.TextWidget:
    """A link to the dev pods' log group, and how to find one reservation's output in it."""
    region = Stack.of(scope).region
    console = f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"
    # The console's fragment encodes "/" in a log group's name as $252F.
    group = POD_LOG_GROUP.replace("/", "$252F")
    return cloudwatch.TextWidget(
        markdown=(
            f"## Dev pods' output\n[Log group `{POD_LOG_GROUP}`]"
            f"({console}#logsV2:log-groups/log-group/{group}): one stream per pod, "
            "`<reservation id>.<pod name>`. A reservation that failed to start: "
            "`gpu-dev admin events ID` first (its timeline holds the last 20 lines), then "
            "Logs Insights on this group with `filter @logStream like /^ID/` "
            "(docs/operator-guide.md, runbooks)."
        ),
        width=WIDTH,
        height=6,
    )


def _labelled(
    state_machines: Sequence[sfn.StateMachine],
) -> list[tuple[sfn.StateMachine, str]]:
    return [(machine, machine.node.id.removesuffix("StateMachine")) for machine in state_machines]
