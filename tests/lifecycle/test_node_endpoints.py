"""Every node of a multinode reservation is reachable on its own SSH endpoint (a NodePort
Service per rank, selecting that rank's pod), the API's view carries each node's, and every
one is torn down at the end; an added user GitHub lists no keys for is named on the row."""

from __future__ import annotations

from gpudev.cluster.vocabulary import RANK_LABEL, RESERVATION_LABEL
from tests.lifecycle.helpers import (
    assert_nothing_left,
    cancel,
    objects_of,
    reserve,
    show,
    wait_for_status,
)
from tests.support.waiting import wait_for


def test_each_node_of_a_multinode_reservation_has_its_own_ssh_endpoint(api, local_cloud):
    rid = reserve(api, gpu_type="h100", gpu_count=16, hours=0.5)["reservation_id"]
    active = wait_for_status(api, rid, "active", timeout=60)
    objects = objects_of(local_cloud, rid)
    ssh_services = {
        s["metadata"]["name"]: s for s in objects["services"] if s["spec"].get("type") == "NodePort"
    }
    assert sorted(ssh_services) == [f"gpu-dev-{rid[:8]}-ssh", f"gpu-dev-{rid[:8]}-ssh-1"]
    node_of_rank = {
        p["metadata"]["labels"][RANK_LABEL]: p["spec"]["nodeName"] for p in objects["pods"]
    }
    assert len(set(node_of_rank.values())) == 2
    ports = {}
    for service in ssh_services.values():
        selector = service["spec"]["selector"]
        rank = selector[RANK_LABEL]
        assert selector[RESERVATION_LABEL] == rid
        assert service["spec"]["externalTrafficPolicy"] == "Local"
        ports[int(rank)] = service["spec"]["ports"][0]["nodePort"]
    assert len(set(ports.values())) == 2, "each node its own NodePort"
    nodes = active["ssh_nodes"]
    assert [n["rank"] for n in nodes] == [0, 1]
    assert {n["rank"]: n["node_port"] for n in nodes} == ports
    assert all(n["node_ip"] for n in nodes) and nodes[0]["node_ip"] != nodes[1]["node_ip"]
    # node 0's endpoint is also the reservation's, as before
    assert (active["node_ip"], active["node_port"]) == (nodes[0]["node_ip"], nodes[0]["node_port"])
    cancel(api, rid)
    wait_for_status(api, rid, "cancelled")
    assert_nothing_left(local_cloud, rid)  # every node's Service included


def test_an_added_user_without_github_keys_is_named_until_they_add_one(api, local_cloud):
    rid = reserve(api, github_user="alice")["reservation_id"]
    wait_for_status(api, rid, "active")
    for user in ("octocat", "nokeys-person"):
        reply = api.call("POST", f"/v1/reservations/{rid}/users", body={"github_username": user})
        assert reply.status == 202, reply.body
    shown = wait_for(
        lambda: (r := show(api, rid))["keyless_users"] and r,
        message="the keyless user recorded",
    )
    assert shown["keyless_users"] == ["nokeys-person"]
    assert sorted(shown["secondary_users"]) == ["nokeys-person", "octocat"]
