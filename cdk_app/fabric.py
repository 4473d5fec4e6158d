"""The cluster stack's fabric for multinode reservations (docs/multinode.md): a GPU node
group of an EFA-capable instance type gets

- a launch template with every EFA interface the type has (the primary card's ENA for IP,
  then EFA-only interfaces: one more on card 0, one on each other card, as EC2's guide
  for multi-card instances lays them out), in the cluster security group;
- a cluster placement group of its own, named in the launch template, and one subnet (so
  one zone: EFA never crosses a zone); its nodes are labelled with the group
  (`gpu-dev/placement-group`), which with the zone is the fabric the allocator keeps a
  multinode grant in (gpudev/allocation/pool.py);
- the security group rule EFA needs besides the cluster security group's own (EKS lets all
  traffic in from the group itself): all traffic out to the group itself, which EFA's
  OS-bypass traffic needs even where a 0.0.0.0/0 egress rule exists.

The EFA device plugin that advertises `vpc.amazonaws.com/efa` on those nodes is a
manifest the operator applies (deploy/kubernetes/efa-device-plugin.yaml); `make
deploy-check` finds whether it runs.
"""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from gpudev.cluster.vocabulary import PLACEMENT_GROUP_LABEL

# EFA interfaces per instance type (EC2's NetworkInfo.EfaInfo.MaximumEfaInterfaces); the
# GPU type catalogue holds the same counts (migrations/0041_fabric.sql; a test keeps them
# equal). An instance type not listed gets no EFA.
EFA_INTERFACES: dict[str, int] = {
    "p4d.24xlarge": 4,
    "p4de.24xlarge": 4,
    "p5.48xlarge": 32,
    "p5e.48xlarge": 32,
    "p5en.48xlarge": 16,
    "p6-b200.48xlarge": 8,
}


def efa_interfaces(instance_type: str) -> int:
    return EFA_INTERFACES.get(instance_type, 0)


def placement_group_name(gpu_type: str) -> str:
    """The node label's value for the type's group (a label value of our choosing: the
    placement group's own name is CloudFormation's, and may pass a label's 63 characters)."""
    return f"gpudev-{gpu_type}-efa"


def network_interfaces(
    count: int, security_group: str
) -> list[ec2.CfnLaunchTemplate.NetworkInterfaceProperty]:
    """The primary ENA interface, then `count` EFA-only ones: card 0 device 1, then device 0
    of cards 1 … count-1."""
    primary = ec2.CfnLaunchTemplate.NetworkInterfaceProperty(
        network_card_index=0,
        device_index=0,
        interface_type="interface",
        groups=[security_group],
        delete_on_termination=True,
    )
    efa = [
        ec2.CfnLaunchTemplate.NetworkInterfaceProperty(
            network_card_index=card,
            device_index=1 if card == 0 else 0,
            interface_type="efa-only",
            groups=[security_group],
            delete_on_termination=True,
        )
        for card in range(count)
    ]
    return [primary, *efa]


def placement_group(scope: Construct, gpu_type: str) -> ec2.CfnPlacementGroup:
    return ec2.CfnPlacementGroup(scope, f"PlacementGroup-{gpu_type}", strategy="cluster")


def fabric_labels(gpu_type: str) -> dict[str, str]:
    return {PLACEMENT_GROUP_LABEL: placement_group_name(gpu_type)}


def efa_security_group_rule(scope: Construct, security_group: str) -> None:
    """All traffic out to the cluster security group itself (its ingress from itself is
    EKS's own rule: adding it again would fail as a duplicate)."""
    ec2.CfnSecurityGroupEgress(
        scope,
        "EfaEgressToItself",
        group_id=security_group,
        ip_protocol="-1",
        destination_security_group_id=security_group,
        description="EFA: all traffic between the cluster's nodes (EC2 EFA requirement)",
    )
