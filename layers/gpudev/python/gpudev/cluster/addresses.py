"""Public addresses for the nodes of EFA node groups (docs/multinode.md).

EC2 gives no public IPv4 address to an instance launched with several network interfaces,
and an EFA node group's launch template has several (cdk_app/fabric.py). Users reach their
pods through the node's public address, so each running EFA node gets an Elastic IP on its
primary interface (device 0 of network card 0), as EC2's guide for such instances says. The
EKS cloud controller then reports it as the node's ExternalIP.

Every address is tagged `gpu-dev:instance=<instance id>` when it is allocated. A run first
reuses a tagged address that is free, so a retry never allocates a second one. Runs take
turns (the availability updater's advisory lock); a spare left by a run that died is
associated or released by the next.
An address tagged for an instance that is gone is released too. An address that is
associated is never released.

The planner is pure (`plan_addresses`); `reconcile_node_addresses` reads EC2 in bulk,
plans and applies. The availability updater runs it every minute.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from gpudev.observability import logger

INSTANCE_TAG = "gpu-dev:instance"
# An instance in these states is gone: its address is released once free.
GONE_STATES = frozenset({"shutting-down", "terminated"})
_FILTER_VALUES = 200  # instance ids per DescribeInstances filter


@dataclass(frozen=True)
class Instance:
    instance_id: str
    state: str
    primary_interface: str | None  # device 0 of network card 0
    public_ip: str | None  # of the primary interface


@dataclass(frozen=True)
class Address:
    allocation_id: str
    public_ip: str
    instance_id: str  # its INSTANCE_TAG
    association_id: str | None


@dataclass(frozen=True)
class Allocate:
    """Allocate an address tagged for the instance, then associate it with the interface."""

    instance_id: str
    network_interface_id: str


@dataclass(frozen=True)
class Associate:
    allocation_id: str
    instance_id: str
    network_interface_id: str


@dataclass(frozen=True)
class Release:
    allocation_id: str
    instance_id: str


Action = Allocate | Associate | Release


def plan_addresses(
    efa_instance_ids: Iterable[str],
    instances: Mapping[str, Instance],
    addresses: Sequence[Address],
) -> list[Action]:
    """What to do so that every running EFA instance has a public address on its primary
    interface and no free tagged address outlives its use.

    - A running EFA instance without a public address: its free tagged address (the first
      by allocation id) is associated, or a new one allocated.
    - A free tagged address is released when its instance is gone, or when its instance
      has a public address already or another free address is kept for it.
    - An associated address is never released."""
    free: dict[str, list[Address]] = {}
    for address in sorted(addresses, key=lambda a: a.allocation_id):
        if address.association_id is None:
            free.setdefault(address.instance_id, []).append(address)

    def needs_address(instance: Instance | None) -> bool:
        return (
            instance is not None
            and instance.state not in GONE_STATES
            and instance.primary_interface is not None
            and instance.public_ip is None
        )

    actions: list[Action] = []
    for instance_id in sorted(set(efa_instance_ids)):
        instance = instances.get(instance_id)
        if instance is None or instance.state != "running" or not needs_address(instance):
            continue
        assert instance.primary_interface is not None
        spare = free.get(instance_id)
        if spare:
            actions.append(
                Associate(spare[0].allocation_id, instance_id, instance.primary_interface)
            )
        else:
            actions.append(Allocate(instance_id, instance.primary_interface))
    for instance_id, spare in sorted(free.items()):
        kept = 1 if needs_address(instances.get(instance_id)) else 0
        actions.extend(Release(a.allocation_id, instance_id) for a in spare[kept:])
    return actions


@dataclass(frozen=True)
class AddressRun:
    allocated: int
    associated: int
    released: int
    failed: int

    @property
    def statistics(self) -> dict[str, int]:
        return {
            "addresses_allocated": self.allocated,
            "addresses_associated": self.associated,
            "addresses_released": self.released,
            "address_actions_failed": self.failed,
        }


def reconcile_node_addresses(ec2: Any, efa_instance_ids: Iterable[str]) -> AddressRun:
    """Read the tagged addresses and the instances concerned, plan, apply. An action that
    fails is logged and left to the next run (each is safe to repeat)."""
    wanted = set(efa_instance_ids)
    addresses = read_tagged_addresses(ec2)
    instances = read_instances(ec2, wanted | {a.instance_id for a in addresses})
    counts = {"allocated": 0, "associated": 0, "released": 0, "failed": 0}
    for action in plan_addresses(wanted, instances, addresses):
        try:
            _apply(ec2, action, counts)
        except ClientError:
            counts["failed"] += 1
            logger.exception("node address action failed", extra={"action": repr(action)})
    return AddressRun(**counts)


def _apply(ec2: Any, action: Action, counts: dict[str, int]) -> None:
    if isinstance(action, Release):
        ec2.release_address(AllocationId=action.allocation_id)
        counts["released"] += 1
        return
    if isinstance(action, Allocate):
        allocated = ec2.allocate_address(
            Domain="vpc",
            TagSpecifications=[
                {
                    "ResourceType": "elastic-ip",
                    "Tags": [{"Key": INSTANCE_TAG, "Value": action.instance_id}],
                }
            ],
        )
        counts["allocated"] += 1
        action = Associate(
            allocated["AllocationId"], action.instance_id, action.network_interface_id
        )
    # AllowReassociation=False: an address another run associated meanwhile stays put.
    ec2.associate_address(
        AllocationId=action.allocation_id,
        NetworkInterfaceId=action.network_interface_id,
        AllowReassociation=False,
    )
    counts["associated"] += 1


def read_tagged_addresses(ec2: Any) -> list[Address]:
    reply = ec2.describe_addresses(Filters=[{"Name": "tag-key", "Values": [INSTANCE_TAG]}])
    addresses = []
    for item in reply["Addresses"]:
        tags = {t["Key"]: t["Value"] for t in item.get("Tags", [])}
        addresses.append(
            Address(
                allocation_id=item["AllocationId"],
                public_ip=item["PublicIp"],
                instance_id=tags[INSTANCE_TAG],
                association_id=item.get("AssociationId") or None,
            )
        )
    return addresses


def read_instances(ec2: Any, instance_ids: set[str]) -> dict[str, Instance]:
    """The instances that exist among `instance_ids` (a filter, not InstanceIds: an id that
    is gone is left out instead of failing the call)."""
    ids = sorted(instance_ids)
    found: dict[str, Instance] = {}
    paginator = ec2.get_paginator("describe_instances")
    for start in range(0, len(ids), _FILTER_VALUES):
        chunk = ids[start : start + _FILTER_VALUES]
        for page in paginator.paginate(Filters=[{"Name": "instance-id", "Values": chunk}]):
            for reservation in page["Reservations"]:
                for item in reservation["Instances"]:
                    found[item["InstanceId"]] = instance_of(item)
    return found


def instance_of(item: Mapping[str, Any]) -> Instance:
    primary = next(
        (
            ni
            for ni in item.get("NetworkInterfaces", [])
            if ni.get("Attachment", {}).get("DeviceIndex") == 0
            and ni.get("Attachment", {}).get("NetworkCardIndex", 0) == 0
        ),
        None,
    )
    return Instance(
        instance_id=item["InstanceId"],
        state=item["State"]["Name"],
        primary_interface=primary["NetworkInterfaceId"] if primary else None,
        public_ip=(primary.get("Association") or {}).get("PublicIp") if primary else None,
    )
