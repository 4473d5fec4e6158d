"""The EFA nodes' Elastic IPs against moto's EC2 and the stand-in's nodes: the local cloud's
EFA group (localcloud/seed.py) launches its instances without a public address, so its nodes
have no ExternalIP; the reconciler allocates and associates one tagged address per node,
which the stand-in then reports as the node's ExternalIP; a second run allocates nothing; an
address whose instance is gone is released once EC2 has freed it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import psycopg
import pytest

from gpudev.availability.service import NODE_ADDRESSES_LOCK_KEY, _node_addresses
from gpudev.cluster.addresses import INSTANCE_TAG, reconcile_node_addresses
from gpudev.cluster.vocabulary import Node
from localcloud.kubernetes.nodes import NodeShape, sync_nodes
from localcloud.kubernetes.store import ObjectStore
from localcloud.seed import ClusterDescription, seed

SHAPES = {
    "h100": NodeShape("h100", "p5.48xlarge", 8, 192, 2048, public_subnet=True, efa=32),
    "t4": NodeShape("t4", "g4dn.12xlarge", 4, 48, 192, public_subnet=True),
}


@pytest.fixture
def cloud() -> Iterator[tuple[Any, Any]]:
    from moto import mock_aws

    with mock_aws():

        def client(service: str) -> Any:
            return boto3.client(service, region_name="us-east-2")

        description = ClusterDescription(
            cluster_name="pytorch-gpu-dev-cluster",
            availability_zones=["us-east-2a", "us-east-2b"],
            node_groups=[
                {"gpu_type": "t4", "nodes": 1},
                {
                    "gpu_type": "h100",
                    "nodes": 2,
                    "zones": ["us-east-2a"],
                    "placement_group": "gpudev-h100-efa",
                },
            ],
            volumes=[],
        )
        seed(description, client, {"t4": "g4dn.12xlarge", "h100": "p5.48xlarge"})
        yield client("ec2"), client("autoscaling")


def _external_ips(store: ObjectStore) -> dict[str, tuple[str, str | None]]:
    return {
        node["metadata"]["name"]: (
            node["metadata"]["labels"]["GpuType"],
            next(
                (a["address"] for a in node["status"]["addresses"] if a["type"] == "ExternalIP"),
                None,
            ),
        )
        for node in store.list("nodes", None, frozen=True)["items"]
    }


def _efa_instances(store: ObjectStore) -> list[str]:
    return [name for name, (gpu_type, _) in _external_ips(store).items() if gpu_type == "h100"]


def test_efa_nodes_start_without_an_external_ip_and_get_their_elastic_ip(
    cloud: tuple[Any, Any],
) -> None:
    ec2, autoscaling = cloud
    store = ObjectStore()
    sync_nodes(store, autoscaling, SHAPES, ec2)
    before = _external_ips(store)
    assert [ip for gpu_type, ip in before.values() if gpu_type == "h100"] == [None, None]
    assert [ip for gpu_type, ip in before.values() if gpu_type == "t4"] != [None]

    run = reconcile_node_addresses(ec2, _efa_instances(store))

    assert (run.allocated, run.associated, run.released, run.failed) == (2, 2, 0, 0)
    addresses = ec2.describe_addresses()["Addresses"]
    tags = {
        a["PublicIp"]: {t["Key"]: t["Value"] for t in a["Tags"]}[INSTANCE_TAG] for a in addresses
    }
    sync_nodes(store, autoscaling, SHAPES, ec2)
    after = _external_ips(store)
    assert {name: after[name][1] for name in _efa_instances(store)} == {
        instance: ip for ip, instance in tags.items()
    }

    again = reconcile_node_addresses(ec2, _efa_instances(store))
    assert again.statistics == {
        "addresses_allocated": 0,
        "addresses_associated": 0,
        "addresses_released": 0,
        "address_actions_failed": 0,
    }
    assert len(ec2.describe_addresses()["Addresses"]) == 2


def test_a_free_tagged_address_is_used_before_any_is_allocated(cloud: tuple[Any, Any]) -> None:
    ec2, autoscaling = cloud
    store = ObjectStore()
    sync_nodes(store, autoscaling, SHAPES, ec2)
    first = _efa_instances(store)[0]
    left_over = ec2.allocate_address(
        Domain="vpc",
        TagSpecifications=[
            {"ResourceType": "elastic-ip", "Tags": [{"Key": INSTANCE_TAG, "Value": first}]}
        ],
    )

    run = reconcile_node_addresses(ec2, [first])

    assert (run.allocated, run.associated) == (0, 1)
    (address,) = ec2.describe_addresses()["Addresses"]
    assert address["AllocationId"] == left_over["AllocationId"]
    assert address.get("AssociationId")


def test_an_address_of_a_gone_instance_is_released_but_one_in_use_is_kept(
    cloud: tuple[Any, Any],
) -> None:
    ec2, autoscaling = cloud
    store = ObjectStore()
    sync_nodes(store, autoscaling, SHAPES, ec2)
    in_use, _ = _efa_instances(store)
    reconcile_node_addresses(ec2, [in_use])
    gone = ec2.allocate_address(
        Domain="vpc",
        TagSpecifications=[
            {"ResourceType": "elastic-ip", "Tags": [{"Key": INSTANCE_TAG, "Value": "i-0gone"}]}
        ],
    )

    run = reconcile_node_addresses(ec2, [])

    assert (run.allocated, run.associated, run.released) == (0, 0, 1)
    remaining = ec2.describe_addresses()["Addresses"]
    assert [a["AllocationId"] for a in remaining] != [gone["AllocationId"]]
    assert len(remaining) == 1 and remaining[0].get("AssociationId")


def _efa_nodes(store: ObjectStore) -> list[Node]:
    return [
        Node(name, "h100", True, False, 8, instance_id=name, placement_group="gpudev-h100-efa")
        for name in _efa_instances(store)
    ]


def test_the_availability_updater_skips_the_addresses_while_another_run_is_at_them(
    cloud: tuple[Any, Any], conn: psycopg.Connection[Any], fresh_database: str
) -> None:
    ec2, autoscaling = cloud
    store = ObjectStore()
    sync_nodes(store, autoscaling, SHAPES, ec2)
    nodes = _efa_nodes(store)
    with psycopg.connect(fresh_database) as other:
        other.execute("SELECT pg_advisory_lock(%s)", (NODE_ADDRESSES_LOCK_KEY,))
        assert _node_addresses(conn, ec2, nodes) is None
        assert ec2.describe_addresses()["Addresses"] == []
        other.execute("SELECT pg_advisory_unlock(%s)", (NODE_ADDRESSES_LOCK_KEY,))
        other.commit()

    done = _node_addresses(conn, ec2, nodes)

    assert done is not None and done["addresses_allocated"] == 2
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with psycopg.connect(fresh_database) as other:
        row = other.execute(
            "SELECT pg_try_advisory_lock(%s)", (NODE_ADDRESSES_LOCK_KEY,)
        ).fetchone()
        assert row == (True,), "the lock was given back"
    assert _node_addresses(conn, ec2, None) is None, "no node list: nothing is done"
