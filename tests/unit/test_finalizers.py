"""Finalizers in the stand-in's store, as kube-apiserver applies them: a deletion marks an
object that has some, the write removing the last one deletes it, none may be added while
it is deleted, and a pod in its grace period (no finalizers) survives metadata writes."""

from __future__ import annotations

import pytest

from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.store import ObjectStore

CLAIM = {
    "metadata": {"name": "home"},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}


def test_a_deletion_waits_for_the_last_finalizer():
    store = ObjectStore()
    store.create("persistentvolumeclaims", "gpu-dev", CLAIM)  # gets pvc-protection
    marked = store.delete("persistentvolumeclaims", "gpu-dev", "home")
    assert marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 0
    still = store.patch(
        "persistentvolumeclaims", "gpu-dev", "home", {"metadata": {"labels": {"a": "b"}}}
    )
    assert still["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    with pytest.raises(ApiError) as refused:
        store.patch(
            "persistentvolumeclaims",
            "gpu-dev",
            "home",
            {"metadata": {"finalizers": ["kubernetes.io/pvc-protection", "example.com/mine"]}},
        )
    assert refused.value.code == 422
    assert refused.value.causes and refused.value.causes[0]["field"] == "metadata.finalizers"
    store.patch("persistentvolumeclaims", "gpu-dev", "home", {"metadata": {"finalizers": []}})
    with pytest.raises(ApiError) as gone:
        store.get("persistentvolumeclaims", "gpu-dev", "home")
    assert gone.value.code == 404


def test_a_pod_in_its_grace_period_survives_a_metadata_write():
    store = ObjectStore()
    store.create(
        "pods",
        "default",
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    )
    store.bind("default", "p", "node-1")
    store.delete("pods", "default", "p")  # graceful: 30 s
    patched = store.patch("pods", "default", "p", {"metadata": {"labels": {"seen": "yes"}}})
    assert patched["metadata"]["deletionTimestamp"]
    assert store.get("pods", "default", "p")["metadata"]["labels"] == {"seen": "yes"}


def test_a_claim_volume_without_a_claim_name_is_invalid():
    store = ObjectStore()
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "image": "i"}],
            "volumes": [{"name": "home", "persistentVolumeClaim": {}}],
        },
    }
    with pytest.raises(ApiError) as refused:
        store.create("pods", "default", pod)
    assert refused.value.code == 422
    assert refused.value.causes == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value",
            "field": "spec.volumes[0].persistentVolumeClaim.claimName",
        }
    ]
