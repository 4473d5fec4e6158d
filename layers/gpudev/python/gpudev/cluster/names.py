"""What a reservation's objects (and the accounts in its pod) are called, and where each of
its pods runs."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from gpudev.models import Reservation


@dataclass(frozen=True)
class Placement:
    rank: int
    node_name: str
    node_ip: str | None  # internal: what the pods use (rendezvous)
    slots: int
    external_address: str | None = None  # what users outside the VPC connect to
    profiling_node: bool = False  # a node dedicated to profiling (vocabulary.PROFILING_LABEL)

    @property
    def ssh_address(self) -> tuple[str | None, str]:
        """The address users connect to and whether it is external or internal."""
        if self.external_address:
            return self.external_address, "external"
        return self.node_ip, "internal"


class _Suffixed:
    """A `Names` attribute: an object's name, the reservation's base name and a suffix
    (`gpu-dev-1a2b3c4d-ssh`)."""

    def __init__(self, suffix: str):
        self.suffix = suffix

    def __get__(self, names: Names, owner: type | None = None) -> str:
        return f"{names.base}-{self.suffix}"


@dataclass(frozen=True)
class Names:
    base: str
    total_nodes: int
    reservation_id: str

    @classmethod
    def of(cls, reservation: Reservation) -> Names:
        rid = str(reservation.reservation_id)
        return cls(f"gpu-dev-{rid[:8]}", reservation.total_nodes, rid)

    def pod(self, rank: int) -> str:
        return self.base if self.total_nodes == 1 else f"{self.base}-{rank}"

    ssh_service = _Suffixed("ssh")

    def ssh_service_of(self, rank: int) -> str:
        """Each node's own NodePort Service: node 0's keeps the name it always had."""
        return self.ssh_service if rank == 0 else f"{self.ssh_service}-{rank}"

    headless_service = _Suffixed("headless")
    # Jupyter's NodePort Service of a reservation made before Jupyter moved behind SSH: the
    # checkpoint deletes it (lifecycle/active.py).
    jupyter_service = _Suffixed("jupyter")
    control = _Suffixed("control")
    keys = _Suffixed("keys")
    network_policy = _Suffixed("peers")

    @property
    def home(self) -> str:
        """The claim on the disk mounted at /home/dev, and its PersistentVolume: named by the
        full reservation id, PersistentVolumes being cluster-scoped (two users' reservations
        sharing an 8-hex prefix would otherwise take the same name)."""
        return f"gpu-dev-{self.reservation_id}-home"


def collaborator_account(login: str) -> str:
    """The Unix account of an added GitHub user: `gh-` + the login in lower case (GitHub
    logins are case-insensitive), at most 32 characters (useradd's limit: a longer login
    keeps 20 characters and a hash). The prefix keeps it clear of `dev`, `root`, the image's
    system accounts and numeric names, which `id` and `getent` would read as UIDs."""
    name = login.lower()
    if len(name) > 29:
        name = f"{name[:20]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    return f"gh-{name}"
