"""Live GPU availability per type and the cluster's totals."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from gpudev.capacity import Availability, ClusterStatus, availability, cluster_status
from routes.answers import answers
from routes.caller import ForCaller

router = Router()


@router.get(
    "/v1/gpu/availability",
    responses=answers(200, Availability, "free GPUs per type, and what is queued"),
)
def gpu_availability(caller: ForCaller) -> Availability:
    return caller.read(availability)


@router.get("/v1/cluster/status", responses=answers(200, ClusterStatus, "the cluster's totals"))
def get_cluster_status(caller: ForCaller) -> ClusterStatus:
    return caller.read(cluster_status)
