"""Entry point of `cdk synth` / `cdk deploy` (see cdk.json). Synthesizes offline."""

from __future__ import annotations

import sys

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from cdk_app.ca_bundle import RdsCaBundleMissing
from cdk_app.cluster_stack import ClusterStack, wants_cluster
from cdk_app.nag import acknowledge_cluster_findings, acknowledge_findings
from cdk_app.network import CLUSTER_SECURITY_GROUP_CONTEXT, VPC_CONTEXT
from cdk_app.stack import GpuDevStack


def build_app(
    outdir: str | None = None, context: dict[str, object] | None = None
) -> tuple[cdk.App, GpuDevStack]:
    app = cdk.App(outdir=outdir, context=context)
    create_cluster = wants_cluster(app)  # off by default: most teams bring their own cluster
    # Environment-agnostic on purpose: no lookups, so synth needs no AWS credentials.
    stack = GpuDevStack(app, "GpuDev", description="gpu-dev: self-service GPU dev servers")
    cdk.Tags.of(app).add("project", "gpu-dev")
    acknowledge_findings(stack)
    if create_cluster:
        cluster = ClusterStack(app, "GpuDevCluster", description="gpu-dev: the EKS cluster")
        acknowledge_cluster_findings(cluster)
        stack.add_stack_dependency(cluster)  # its access entries need the cluster
        unreachable = cluster_endpoint_out_of_reach(app)
        if unreachable:
            cdk.Annotations.of(stack).add_warning_v2(
                "gpudev:functionsOutsideTheClusterVpc", unreachable
            )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack


def cluster_endpoint_out_of_reach(app: cdk.App) -> str | None:
    """Why the functions could not reach the cluster stack's private endpoint, if they could
    not: outside its VPC, or in it without the rule its security group needs (HTTPS from
    the functions'; the cluster security group admits only its own members otherwise)."""
    missing = [
        key
        for key in (VPC_CONTEXT, CLUSTER_SECURITY_GROUP_CONTEXT)
        if not app.node.try_get_context(key)
    ]
    if not missing:
        return None
    return (
        f"{' and '.join(missing)} not set: the functions cannot reach the cluster's private "
        "endpoint (outside its VPC, or not admitted on 443 by its security group). Deploy "
        "GpuDev with the GpuDevCluster output MainStackContext (docs/operator-guide.md, "
        "Starting from nothing)."
    )


def main(outdir: str | None = None, context: dict[str, object] | None = None) -> int:
    """`cdk synth`/`cdk deploy`'s entry point: a missing RDS CA bundle is one line, exit 1."""
    try:
        build_app(outdir=outdir, context=context)[0].synth()
    except RdsCaBundleMissing as missing:  # a file to fetch, not a bug: no traceback
        print(f"error: {missing}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
