"""Live GPU availability per type and the cluster's totals."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from gpudev.capacity import Availability, ClusterStatus, availability, cluster_status
from routes.caller import ForCaller

router = Router()


@router.get("/v1/gpu/availability")
def gpu_availability(caller: ForCaller) -> Availability:
    return caller.read(availability)


@router.get("/v1/cluster/status")
def get_cluster_status(caller: ForCaller) -> ClusterStatus:
    return caller.read(cluster_status)
