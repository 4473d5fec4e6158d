"""A reservation active when Jupyter moved behind SSH (issue #27): its checkpoint made a
Jupyter NodePort Service and recorded its port and a network URL. The next checkpoint deletes
that Service and writes the localhost URL the owner opens through `gpu-dev connect
--jupyter`, so the token stops crossing the network."""

from __future__ import annotations

import psycopg

from tests.lifecycle.helpers import objects_of, reserve, show, wait_for_status
from tests.support.waiting import wait_for


def test_a_jupyter_service_from_before_goes_at_the_next_checkpoint(api, local_cloud):
    rid = reserve(api, github_user="alice", jupyter=True)["reservation_id"]
    active = wait_for_status(api, rid, "active")
    shown = wait_for(lambda: (r := show(api, rid))["jupyter_url"] and r, message="Jupyter URL")
    token = shown["jupyter_url"].rsplit("token=", 1)[1]
    assert shown["jupyter_url"] == f"http://localhost:8888/lab?token={token}"

    # what a checkpoint of the old code left behind: the Service, its port and URL on the row
    services = objects_of(local_cloud, rid)["services"]
    (ssh,) = [s for s in services if s["metadata"]["name"].endswith("-ssh")]
    old = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": ssh["metadata"]["name"].removesuffix("-ssh") + "-jupyter",
            "labels": {**ssh["metadata"]["labels"], "gpu-dev/jupyter": "true"},
        },
        "spec": {
            "type": "NodePort",
            "selector": ssh["spec"]["selector"],
            "ports": [{"name": "jupyter", "port": 8888, "targetPort": 8888}],
        },
    }
    assert local_cloud.kubernetes is not None
    local_cloud.kubernetes.store.create("services", ssh["metadata"]["namespace"], old)
    with psycopg.connect(local_cloud.database_url) as conn:
        conn.execute(
            "UPDATE reservations SET jupyter_port = 30888, jupyter_url = %s"
            " WHERE reservation_id = %s",
            (f"http://{active['node_ip']}:30888/lab?token={token}", rid),
        )

    assert api.call("POST", f"/v1/reservations/{rid}/extend", body={"hours": 1}).status == 202
    wait_for(
        lambda: (
            not any(
                s["metadata"]["name"].endswith("-jupyter")
                for s in objects_of(local_cloud, rid)["services"]
            )
        ),
        message="the old Jupyter Service deleted",
    )
    after = wait_for(
        lambda: (r := show(api, rid))["jupyter_url"].startswith("http://localhost") and r,
        message="the localhost URL",
    )
    assert after["jupyter_url"] == f"http://localhost:8888/lab?token={token}"
    with psycopg.connect(local_cloud.database_url) as conn:
        row = conn.execute(
            "SELECT jupyter_port FROM reservations WHERE reservation_id = %s", (rid,)
        ).fetchone()
    assert row == (None,)
