"""The EFA nodes' Elastic IPs are planned without I/O (gpudev/cluster/addresses.py): a node
without a public address gets one (a free one tagged for it first), a free address whose
node is gone or already served is released, and an address in use is never released."""

from __future__ import annotations

from gpudev.cluster.addresses import (
    Address,
    Allocate,
    Associate,
    Instance,
    Release,
    instance_of,
    plan_addresses,
)


def _running(instance_id: str, public_ip: str | None = None, state: str = "running") -> Instance:
    return Instance(instance_id, state, f"eni-{instance_id}", public_ip)


def _address(allocation_id: str, instance_id: str, association_id: str | None = None) -> Address:
    return Address(allocation_id, "203.0.113.7", instance_id, association_id)


def test_a_new_efa_instance_gets_an_address_allocated_for_its_primary_interface() -> None:
    actions = plan_addresses(["i-1"], {"i-1": _running("i-1")}, [])
    assert actions == [Allocate("i-1", "eni-i-1")]


def test_a_free_address_tagged_for_the_instance_is_reused_not_allocated_again() -> None:
    actions = plan_addresses(["i-1"], {"i-1": _running("i-1")}, [_address("eipalloc-1", "i-1")])
    assert actions == [Associate("eipalloc-1", "i-1", "eni-i-1")]


def test_an_instance_with_a_public_address_needs_nothing() -> None:
    actions = plan_addresses(["i-1"], {"i-1": _running("i-1", "198.51.100.1")}, [])
    assert actions == []


def test_an_instance_not_yet_running_is_left_for_a_later_run() -> None:
    assert plan_addresses(["i-1"], {"i-1": _running("i-1", state="pending")}, []) == []
    assert plan_addresses(["i-1"], {}, []) == []


def test_a_free_address_of_a_gone_instance_is_released() -> None:
    gone = [_address("eipalloc-1", "i-gone"), _address("eipalloc-2", "i-ended")]
    instances = {"i-ended": _running("i-ended", state="terminated")}
    actions = plan_addresses([], instances, gone)
    assert actions == [Release("eipalloc-2", "i-ended"), Release("eipalloc-1", "i-gone")]


def test_an_address_in_use_is_never_released_even_when_its_instance_is_gone() -> None:
    in_use = [_address("eipalloc-1", "i-gone", association_id="eipassoc-1")]
    assert plan_addresses([], {}, in_use) == []
    in_use_by_live = [_address("eipalloc-2", "i-1", association_id="eipassoc-2")]
    assert plan_addresses(["i-1"], {"i-1": _running("i-1", "203.0.113.7")}, in_use_by_live) == []


def test_a_spare_left_by_an_overlapping_run_is_released_once_the_instance_has_its_address() -> None:
    addresses = [
        _address("eipalloc-1", "i-1", association_id="eipassoc-1"),
        _address("eipalloc-2", "i-1"),
    ]
    actions = plan_addresses(["i-1"], {"i-1": _running("i-1", "203.0.113.7")}, addresses)
    assert actions == [Release("eipalloc-2", "i-1")]


def test_of_two_free_addresses_for_one_instance_the_first_is_used_and_the_other_released() -> None:
    addresses = [_address("eipalloc-2", "i-1"), _address("eipalloc-1", "i-1")]
    actions = plan_addresses(["i-1"], {"i-1": _running("i-1")}, addresses)
    assert actions == [
        Associate("eipalloc-1", "i-1", "eni-i-1"),
        Release("eipalloc-2", "i-1"),
    ]


def test_a_free_address_of_a_stopped_instance_is_kept_for_its_return() -> None:
    addresses = [_address("eipalloc-1", "i-1")]
    assert plan_addresses([], {"i-1": _running("i-1", state="stopped")}, addresses) == []


def _attached(device: int, card: int) -> dict[str, int]:
    return {"DeviceIndex": device, "NetworkCardIndex": card}


def test_the_primary_interface_is_device_0_of_network_card_0() -> None:
    item = {
        "InstanceId": "i-1",
        "State": {"Name": "running"},
        "NetworkInterfaces": [
            {"NetworkInterfaceId": "eni-c1", "Attachment": _attached(device=0, card=1)},
            {"NetworkInterfaceId": "eni-c0", "Attachment": _attached(device=1, card=0)},
            {
                "NetworkInterfaceId": "eni-primary",
                "Attachment": _attached(device=0, card=0),
                "Association": {"PublicIp": "198.51.100.9"},
            },
        ],
    }
    assert instance_of(item) == Instance("i-1", "running", "eni-primary", "198.51.100.9")
    without = {**item, "NetworkInterfaces": item["NetworkInterfaces"][:2]}
    assert instance_of(without) == Instance("i-1", "running", None, None)
