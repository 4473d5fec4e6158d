"""A pod's claims, each said by what it is (pure): the home claim by the named disk's name
(else the claim's), the personal share's claim as `personal share /shared-personal`. Every
pod of a reservation with the share has its claim, rank 0 and the others, while only rank
0 has a named disk's: the timeline (`pod_timeline.py`) and the readiness check
(`pod_readiness.py`) say which one a pod is waiting for, and which one a FailedMount is
about."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gpudev.cluster import shared_files, team_share

SHARE = f"personal share {shared_files.MOUNT_PATH}"
TEAM_SHARE = f"team share {team_share.MOUNT_PATH}"
_SHARES = {shared_files.VOLUME: SHARE, team_share.VOLUME: TEAM_SHARE}
# The volumes a kubelet event names: `... for volume "pv-1" ...` (SetUp/Attach failures),
# `unmounted volumes=[home shared-personal]` (the mount's timeout; its `unattached volumes`
# lists every volume still waiting, so says nothing of which failed).
_QUOTED = re.compile(r'volume "([^"]+)"')
_LISTED = re.compile(r"unmounted volumes=\[([^\]]*)\]")


@dataclass(frozen=True)
class PodClaim:
    volume: str  # the pod's volume name
    claim: str
    is_share: bool

    def said(self, disk: str | None) -> str:
        """`personal share /shared-personal`, or `disk <the user's name, else the claim>`."""
        return _SHARES.get(self.volume, SHARE) if self.is_share else f"disk {disk or self.claim}"


def pod_claims(pod: dict[str, Any]) -> list[PodClaim]:
    """The pod's claims, the home's (if any) first."""
    found = [
        PodClaim(
            str(v.get("name", "")),
            str(v["persistentVolumeClaim"].get("claimName", "")),
            v.get("name") in _SHARES,
        )
        for v in (pod.get("spec") or {}).get("volumes") or []
        if v.get("persistentVolumeClaim")
    ]
    return sorted(found, key=lambda c: c.is_share)


def claim_of_event(pod: dict[str, Any], event: dict[str, Any]) -> PodClaim | None:
    """The claim a FailedAttachVolume/FailedMount event is about: the one whose claim (its
    PersistentVolume has the same name) or pod volume the message names; an attach failure
    naming none is the disk's (EFS attaches nothing). None when it cannot be told."""
    claims = pod_claims(pod)
    message = str(event.get("message") or "")
    named = set(_QUOTED.findall(message))
    for listed in _LISTED.findall(message):
        named.update(listed.replace(",", " ").split())
    about = [c for c in claims if c.claim in named or c.volume in named]
    if len(about) == 1:
        return about[0]
    disks = [c for c in claims if not c.is_share]
    if event.get("reason") == "FailedAttachVolume" and len(disks) == 1:
        return disks[0]
    return None


def starting_step(pod: dict[str, Any], disk: str | None) -> str | None:
    """`attaching disk <name>`, `mounting personal share /shared-personal`, or both."""
    steps = [
        f"mounting {c.said(disk)}" if c.is_share else f"attaching {c.said(disk)}"
        for c in pod_claims(pod)
    ]
    return " and ".join(steps) or None
