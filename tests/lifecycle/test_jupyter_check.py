"""Jupyter on an image without it, through the whole deployment: node 0's init container
finds no jupyter-lab, the readiness check records that on the row, `show` gives the reason
instead of a URL (and no Jupyter Service is made), and enabling Jupyter is refused with it.
(The image with Jupyter, the tier's default, gets its URL: test_extend_queue_multinode.py.)"""

from __future__ import annotations

from tests.lifecycle.conftest import DEV_IMAGE
from tests.lifecycle.helpers import objects_of, reserve, show, wait_for_status
from tests.support.waiting import wait_for


def test_an_image_without_jupyter_gives_the_reason_never_a_url(api, local_cloud):
    local_cloud.cluster.kubelet.jupyter_images = frozenset()  # this image has no jupyter-lab
    rid = reserve(api, github_user="alice", jupyter=True)["reservation_id"]
    active = wait_for_status(api, rid, "active")
    assert (active["jupyter_enabled"], active["jupyter_available"]) == (True, False)
    assert active["jupyter_error"].startswith(f"the image {DEV_IMAGE} has no jupyter-lab (")
    assert active["jupyter_error"].endswith(
        "operators: build the dev image (deploy/dev-image) and deploy with it"
    )
    (pod,) = objects_of(local_cloud, rid)["pods"]  # node 0's, the one that checks
    (check,) = pod["status"]["initContainerStatuses"]
    assert check["state"]["terminated"]["reason"] == "Completed"

    refused = api.call("PUT", f"/v1/reservations/{rid}/jupyter")
    assert refused.status == 409, refused.body
    assert refused.body["message"] == (
        f"Jupyter cannot be enabled on reservation {rid[:8]}: {active['jupyter_error']}"
    )
    # the first checkpoint applied the ConfigMap (Jupyter wanted), and made no Service
    wait_for(
        lambda: objects_of(local_cloud, rid)["configmaps"][0]["data"]["expires_at"],
        message="the first checkpoint",
    )
    objects = objects_of(local_cloud, rid)
    assert objects["configmaps"][0]["data"]["jupyter"] == "true"
    assert not any(s["metadata"]["name"].endswith("-jupyter") for s in objects["services"])
    assert show(api, rid)["jupyter_url"] is None
