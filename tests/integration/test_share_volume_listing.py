"""The sweeper's listing of personal shares' PersistentVolumes (`PersistentVolumes.
share_reservations`, issue #34 review) on the Kubernetes stand-in over HTTP: only EFS CSI
volumes labelled with a reservation, whatever their claim became; a named disk's EBS
volume is never one of them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from gpudev.cluster.shared_files import EFS_CSI_DRIVER
from gpudev.cluster.vocabulary import RESERVATION_LABEL
from gpudev.cluster.volumes import PersistentVolumes
from localcloud.kubernetes.store import ObjectStore
from tests.support.kubernetes import stand_in_api_client, stand_in_server


@pytest.fixture
def api_client() -> Iterator[Any]:
    server = stand_in_server(ObjectStore(), "test")
    server.start()
    api = stand_in_api_client(server)
    try:
        yield api
    finally:
        api.close()
        server.stop()


def _volume(name: str, driver: str, handle: str, reservation: str | None) -> dict[str, Any]:
    labels = {RESERVATION_LABEL: reservation} if reservation else {}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "capacity": {"storage": "5Ti"},
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "csi": {"driver": driver, "volumeHandle": handle},
        },
    }


def test_only_labelled_share_volumes_are_listed_and_deleted_by_reservation(api_client: Any):
    from kubernetes import client

    core = client.CoreV1Api(api_client)
    for manifest in (
        _volume("gpu-dev-r1-shared", EFS_CSI_DRIVER, "fs-1::fsap-1", "r1"),
        _volume("gpu-dev-r2-home", "ebs.csi.aws.com", "vol-1", "r2"),
        _volume("someone-elses", EFS_CSI_DRIVER, "fs-1::fsap-2", None),
    ):
        core.create_persistent_volume(manifest)
    volumes = PersistentVolumes(api_client)
    assert volumes.share_reservations() == {"r1"}
    assert volumes.delete_all("r1") == 1
    assert volumes.share_reservations() == set()
    # deleted (the pv-protection finalizer holds it until its controller lets it go: no
    # controller runs here), and no longer listed as a share to delete again
    left = {
        v.metadata.name
        for v in core.list_persistent_volume().items
        if not v.metadata.deletion_timestamp
    }
    assert left == {"gpu-dev-r2-home", "someone-elses"}
