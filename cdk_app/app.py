"""Entry point of `cdk synth` / `cdk deploy` (see cdk.json). Synthesizes offline."""

from __future__ import annotations

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from cdk_app.cluster_stack import ClusterStack, wants_cluster
from cdk_app.nag import acknowledge_cluster_findings, acknowledge_findings
from cdk_app.network import VPC_CONTEXT
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
        if not app.node.try_get_context(VPC_CONTEXT):
            cdk.Annotations.of(stack).add_warning_v2(
                "gpudev:functionsOutsideTheClusterVpc",
                f"{VPC_CONTEXT} is not set: the functions get a VPC of their own, from which "
                "the cluster's private endpoint is out of reach. Deploy GpuDev with the "
                "GpuDevCluster output MainStackContext (docs/deploy.md, Starting from nothing).",
            )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack


if __name__ == "__main__":
    build_app()[0].synth()
