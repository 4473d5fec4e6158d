"""PersistentVolume and claim validation as pure functions: the field errors kube-apiserver
gives for what our layer sends and its near misses, and the update rules."""

from __future__ import annotations

from typing import Any

from localcloud.kubernetes import storage_validation as sv
from localcloud.kubernetes import validation

AFFINITY = {
    "required": {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "topology.ebs.csi.aws.com/zone", "operator": "In", "values": ["a"]}
                ]
            }
        ]
    }
}


def _pv(**spec: Any) -> dict[str, Any]:
    base = {
        "capacity": {"storage": "1024Gi"},
        "accessModes": ["ReadWriteOnce"],
        "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": "vol-1"},
        "nodeAffinity": AFFINITY,
    }
    return {"metadata": {"name": "pv"}, "spec": {**base, **spec}}


def _errors(check: Any, obj: dict[str, Any]) -> list[str]:
    return [str(error) for error in check(obj)]


def test_what_the_layer_sends_is_valid():
    assert sv.persistent_volume(_pv()) == []
    claim = {
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "",
            "volumeName": "pv",
            "resources": {"requests": {"storage": "1024Gi"}},
        }
    }
    assert sv.persistent_volume_claim(claim) == []


def test_volume_errors_read_as_the_api_servers():
    assert _errors(sv.persistent_volume, _pv(accessModes=[], capacity={"storage": "0"})) == [
        "spec.accessModes: Required value",
        'spec.capacity[storage]: Invalid value: "0": must be greater than zero',
    ]
    assert _errors(sv.persistent_volume, _pv(csi=None)) == [
        "spec: Required value: must specify a volume type"
    ]
    assert _errors(sv.persistent_volume, _pv(hostPath={"path": "/"})) == [
        "spec.csi: Forbidden: may not specify more than 1 volume type"
    ]
    assert _errors(sv.persistent_volume, _pv(csi={"driver": "EBS_CSI", "volumeHandle": "v"}))[
        0
    ].startswith('spec.csi.driver: Invalid value: "EBS_CSI": a lowercase RFC 1123 subdomain')
    assert _errors(
        sv.persistent_volume, _pv(accessModes=["ReadWriteOncePod", "ReadWriteOnce"])
    ) == ["spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"]
    term = {"matchExpressions": [{"key": "zone", "operator": "In"}]}
    assert _errors(
        sv.persistent_volume, _pv(nodeAffinity={"required": {"nodeSelectorTerms": [term]}})
    ) == [
        "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: "
        "Required value: must be specified when `operator` is 'In' or 'NotIn'"
    ]
    assert _errors(sv.persistent_volume, _pv(persistentVolumeReclaimPolicy="Keep")) == [
        'spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: '
        '"Delete", "Recycle", "Retain"'
    ]


def test_a_volume_keeps_its_source_and_affinity_but_not_its_labels():
    old = _pv()
    assert sv.persistent_volume_update({**old, "metadata": {"labels": {"a": "b"}}}, old) == []
    moved = _pv(nodeAffinity={"required": {"nodeSelectorTerms": [{"matchExpressions": []}]}})
    assert [e.field for e in sv.persistent_volume_update(moved, old)] == ["spec.nodeAffinity"]
    other = _pv(csi={"driver": "ebs.csi.aws.com", "volumeHandle": "vol-2"})
    assert [e.field for e in sv.persistent_volume_update(other, old)] == [
        "spec.persistentvolumesource"
    ]


def test_a_claim_may_be_given_its_volume_once_and_resized_only_when_bound():
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    old = {"metadata": {"name": "c"}, "spec": spec, "status": {"phase": "Pending"}}
    named = {**old, "spec": {**spec, "volumeName": "pv"}}
    assert sv.persistent_volume_claim_update(named, old) == []
    renamed = {**old, "spec": {**spec, "volumeName": "other"}}
    assert sv.persistent_volume_claim_update(renamed, named) != []
    bigger = {**old, "spec": {**spec, "resources": {"requests": {"storage": "2Gi"}}}}
    assert sv.persistent_volume_claim_update(bigger, old) != []  # not bound yet
    assert sv.persistent_volume_claim_update(bigger, {**old, "status": {"phase": "Bound"}}) == []


def test_admit_renders_a_status_with_causes_and_refuses_a_resize_with_403():
    refused = validation.admit("persistentvolumes", "PersistentVolume", _pv(capacity={}))
    assert refused is not None and refused.code == 422
    assert [c["field"] for c in refused.status()["details"]["causes"]] == [
        "spec.capacity",
        "spec.capacity",
    ]
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    old = {"metadata": {"name": "c"}, "spec": spec, "status": {"phase": "Bound"}}
    bigger = {
        "metadata": {"name": "c"},
        "spec": {**spec, "resources": {"requests": {"storage": "2Gi"}}},
    }
    resize = validation.admit("persistentvolumeclaims", "PersistentVolumeClaim", bigger, old)
    assert resize is not None and resize.code == 403 and resize.reason == "Forbidden"
