"""A reservation's network objects: a NodePort Service per node, which users reach that
node's sshd by (Jupyter through node 0's: Jupyter listens on a Unix socket, never on a
Service), the headless
Service its pods find each other by, and its NetworkPolicy
(isolation: docs/security.md)."""

from __future__ import annotations

from typing import Any

from gpudev.cluster.names import Names
from gpudev.cluster.objects import manifest
from gpudev.cluster.pod_environment import RENDEZVOUS_PORT
from gpudev.cluster.vocabulary import RANK_LABEL, RESERVATION_LABEL
from gpudev.models import Reservation


def ssh_service(reservation: Reservation, rank: int = 0) -> dict[str, Any]:
    """A NodePort Service to the sshd of the pod of `rank`, answered on the node that pod
    runs on (externalTrafficPolicy Local: each node's endpoint is its own node's address).
    Every node of a multinode reservation gets one, so each is reachable from outside."""
    return manifest(
        "Service",
        reservation,
        Names.of(reservation).ssh_service_of(rank),
        extra_labels={RANK_LABEL: str(rank)},
        spec={
            "type": "NodePort",
            "externalTrafficPolicy": "Local",
            "selector": {
                RESERVATION_LABEL: str(reservation.reservation_id),
                RANK_LABEL: str(rank),
            },
            "ports": [{"name": "ssh", "port": 22, "targetPort": 22, "protocol": "TCP"}],
        },
    )


def headless_service(reservation: Reservation) -> dict[str, Any]:
    return manifest(
        "Service",
        reservation,
        Names.of(reservation).headless_service,
        spec={
            "clusterIP": "None",
            "selector": {RESERVATION_LABEL: str(reservation.reservation_id)},
            "ports": [{"name": "torch-rendezvous", "port": RENDEZVOUS_PORT}],
        },
    )


def network_policy(reservation: Reservation) -> dict[str, Any]:
    """The reservation's pods may reach each other, on every port, and no other pod may
    reach them (the namespace's policies in deploy/kubernetes/network-policies.yaml deny
    everything else and let SSH in from outside the cluster only). Every port,
    not just SSH and the rendezvous port 29500: NCCL's bootstrap and socket transport and
    gloo listen on ephemeral ports, so a port list would break multinode jobs."""
    own_pods = {
        "podSelector": {"matchLabels": {RESERVATION_LABEL: str(reservation.reservation_id)}}
    }
    return manifest(
        "NetworkPolicy",
        reservation,
        Names.of(reservation).network_policy,
        api_version="networking.k8s.io/v1",
        spec={
            **own_pods,
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [own_pods]}],
            "egress": [{"to": [own_pods]}],
        },
    )
