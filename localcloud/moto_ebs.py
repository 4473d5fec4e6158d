"""DescribeSnapshots as EC2 does it: `OwnerIds` scopes the answer to those owners.

moto ignores `OwnerIds`, so `OwnerIds=["self"]` returned the caller's snapshots plus the
1,288 public ones moto seeds with its default AMIs, and matched every filter against each
of them (a `tag-key` filter scans every tag of the region once per snapshot): about 60 ms
of the cloud's interpreter per call. The disk reconcilers call it on every tick
(gpudev/disks/ebs.py), so the lifecycle tier spent a sixth of its CPU there
(docs/testing.md, "The suite's budget"). EC2 answers `self` and account ids with those
owners' snapshots only; here the owners are applied first, then moto's filters. An owner
alias (`amazon`, `aws-marketplace`) has no counterpart on moto's snapshots, so a request
naming one is left unscoped, as moto answers it.

The seam wraps moto's `ElasticBlockStore.describe_snapshots` response; moto is pinned
exactly, and tests/unit/test_moto_ebs_seam.py fails loudly if it moves or changes shape.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable

from moto.core.responses import ActionResult
from moto.ec2.responses.elastic_block_store import ElasticBlockStore
from moto.ec2.utils import generic_filter

EXPECTED_SIGNATURE = "(self) -> moto.core.responses.ActionResult"
_MOTO_DESCRIBE = ElasticBlockStore.describe_snapshots
_ACCOUNT_ID = re.compile(r"\d{12}")


def seam_signature() -> str:
    return str(inspect.signature(_MOTO_DESCRIBE))


def owners_of(requested: list[str], account_id: str) -> set[str] | None:
    """The account ids `OwnerIds` scopes to (`self` is the caller's), or None: not scoped."""
    if not requested or not all(o == "self" or _ACCOUNT_ID.fullmatch(o) for o in requested):
        return None
    return {account_id if o == "self" else o for o in requested}


def install() -> Callable[[], None]:
    def describe_snapshots(self: ElasticBlockStore) -> ActionResult:
        owners = owners_of(self._get_param("OwnerIds", []), self.current_account)
        if owners is None:
            return _MOTO_DESCRIBE(self)
        filters = self._filters_from_querystring()
        snapshot_ids = self._get_param("SnapshotIds", [])
        snapshots = [
            s
            for s in self.ec2_backend.describe_snapshots(snapshot_ids=snapshot_ids)
            if s.owner_id in owners
        ]
        return ActionResult({"Snapshots": generic_filter(filters, snapshots)})

    ElasticBlockStore.describe_snapshots = describe_snapshots  # type: ignore[method-assign]

    def uninstall() -> None:
        ElasticBlockStore.describe_snapshots = _MOTO_DESCRIBE  # type: ignore[method-assign]

    return uninstall
