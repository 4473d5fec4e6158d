"""Seeds moto from the editable cluster description (localcloud/cluster.json): the EKS
cluster record, one Auto Scaling group per node group (named like the real ones, tagged
`GpuType`), and tagged EBS volumes. A node group may name its own `zones` (an EFA node
group has one: EFA never crosses a zone) and a cluster `placement_group` (given to its Auto
Scaling group, as the cluster stack does: cdk_app/fabric.py)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_DESCRIPTION = Path(__file__).with_name("cluster.json")


@dataclass(frozen=True)
class ClusterDescription:
    cluster_name: str
    availability_zones: list[str]
    node_groups: list[dict[str, Any]]
    volumes: list[dict[str, Any]]

    @classmethod
    def load(cls, path: Path = DEFAULT_DESCRIPTION) -> ClusterDescription:
        return cls(**json.loads(path.read_text()))


def asg_name(gpu_type: str) -> str:
    """The reference's naming: the availability updater finds groups by this prefix."""
    kind = "cpu" if gpu_type.startswith("cpu-") else "gpu"
    return f"pytorch-gpu-dev-{kind}-nodes-{gpu_type}"


def _subnet_without_public_ips(ec2: Any, group: dict[str, Any], index: int) -> str:
    """An EFA group's subnet in its one zone. EC2 gives no public address to an instance
    launched with several network interfaces (cdk_app/fabric.py's launch templates); moto
    ignores a launch template's interfaces, so the group's subnet maps none instead. Its nodes
    get an address only from the Elastic IP the availability updater associates
    (gpudev/cluster/addresses.py). `index`: the group's place, for a CIDR of its own beside
    the default VPC's default subnets (172.31.0.0/20 …)."""
    vpc = ec2.describe_vpcs(Filters=[{"Name": "is-default", "Values": ["true"]}])["Vpcs"][0]
    subnet = ec2.create_subnet(
        VpcId=vpc["VpcId"],
        CidrBlock=f"172.31.{128 + 16 * index}.0/20",
        AvailabilityZone=group["zones"][0],
    )["Subnet"]
    return str(subnet["SubnetId"])


def seed(description: ClusterDescription, client: Any, instance_types: dict[str, str]) -> None:
    client("eks").create_cluster(
        name=description.cluster_name,
        roleArn="arn:aws:iam::123456789012:role/gpudev-local-eks",
        resourcesVpcConfig={"subnetIds": []},
    )
    ec2, autoscaling = client("ec2"), client("autoscaling")
    for index, group in enumerate(description.node_groups):
        gpu_type = group["gpu_type"]
        template = f"gpudev-{gpu_type}-nodes"
        ec2.create_launch_template(
            LaunchTemplateName=template,
            LaunchTemplateData={
                "ImageId": "ami-12c6146b",
                "InstanceType": instance_types[gpu_type],
            },
        )
        # (moto has no CreatePlacementGroup: the name is given to the group as it is)
        placement = {}
        if group.get("placement_group"):
            placement = {
                "PlacementGroup": group["placement_group"],
                "VPCZoneIdentifier": _subnet_without_public_ips(ec2, group, index),
            }
        autoscaling.create_auto_scaling_group(
            **placement,
            AutoScalingGroupName=asg_name(gpu_type),
            LaunchTemplate={"LaunchTemplateName": template, "Version": "$Latest"},
            MinSize=0,
            MaxSize=max(8, group["nodes"] * 2),
            DesiredCapacity=group["nodes"],
            AvailabilityZones=group.get("zones", description.availability_zones),
            Tags=[
                {
                    "Key": "GpuType",
                    "Value": gpu_type,
                    "PropagateAtLaunch": True,
                    "ResourceId": asg_name(gpu_type),
                    "ResourceType": "auto-scaling-group",
                }
            ],
        )
    for volume in description.volumes:
        ec2.create_volume(
            AvailabilityZone=volume["zone"],
            Size=volume["size_gb"],
            VolumeType="gp3",
            TagSpecifications=[
                {
                    "ResourceType": "volume",
                    "Tags": [
                        {"Key": "gpu-dev-user", "Value": volume["user"]},
                        {"Key": "disk_name", "Value": volume["disk_name"]},
                    ],
                }
            ],
        )
