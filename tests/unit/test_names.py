"""Object names (gpudev/cluster/names.py): PersistentVolumes are cluster-scoped, so the home
disk's name carries the whole reservation id, not the 8-hex prefix of namespaced objects."""

from __future__ import annotations

import uuid

from gpudev.cluster.names import Names
from gpudev.models import Reservation


def _reservation(rid: str) -> Reservation:
    return Reservation.model_construct(reservation_id=uuid.UUID(rid), total_nodes=1)


def test_two_reservations_sharing_a_prefix_get_different_home_volumes():
    first = Names.of(_reservation("12345678-0000-4000-8000-000000000001"))
    second = Names.of(_reservation("12345678-0000-4000-8000-000000000002"))
    assert first.home == "gpu-dev-12345678-0000-4000-8000-000000000001-home"
    assert first.home != second.home
    assert len(first.home) <= 63  # a DNS label, as claims and volumes accept
