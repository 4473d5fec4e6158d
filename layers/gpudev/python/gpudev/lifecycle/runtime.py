"""The lifecycle's collaborators for this execution environment, built at first use."""

from __future__ import annotations

from typing import Any

import psycopg

from gpudev.aws import aws_clients
from gpudev.cluster.eks import cluster_api_client
from gpudev.lifecycle.keys import GithubKeys
from gpudev.lifecycle.tasks import Lifecycle
from gpudev.settings import cluster_settings, lifecycle_settings, shared_files_settings
from gpudev.signals import Signals


def lifecycle(conn: psycopg.Connection[Any]) -> Lifecycle:
    settings = lifecycle_settings()
    return Lifecycle(
        conn=conn,
        api_client=cluster_api_client(),
        signals=Signals(aws_clients().stepfunctions),
        keys=GithubKeys(settings.github_keys_file),
        settings=settings,
        namespace=cluster_settings().kubernetes_namespace,
        profiling_namespace=cluster_settings().kubernetes_profiling_namespace,
        docker_namespace=cluster_settings().kubernetes_docker_namespace,
        ec2=aws_clients().ec2,
        efs=aws_clients().efs,
        shared_files=shared_files_settings(),
    )
