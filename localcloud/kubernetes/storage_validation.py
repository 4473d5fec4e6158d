"""PersistentVolume and PersistentVolumeClaim validation, as kube-apiserver checks them
(`pkg/apis/core/validation`: ValidatePersistentVolume(Claim)(Update)), for what our layer
sends and its near misses, plus what the API server fills in on create (defaults, the
StorageObjectInUseProtection admission plugin's finalizers, Pending status).

Creates: access modes, capacity (storage only, > 0), exactly one volume source (CSI
driver and volumeHandle required), reclaim policy, volume mode, required node affinity
terms; a claim's access modes and `resources.requests.storage` (> 0), its storage class
name. Updates: a PV's volume source, volume mode and node affinity are immutable; a
claim's spec is immutable but for `volumeName` while empty and, once bound, the storage
request (which the PersistentVolumeClaimResize admission plugin then refuses for a claim
without a storage class, as ours are).
"""

from __future__ import annotations

import json
from typing import Any

from localcloud.kubernetes import rules
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.rules import FieldError, Undecodable, invalid, required

Obj = dict[str, Any]
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
RECLAIM_POLICIES = ("Delete", "Recycle", "Retain")
VOLUME_MODES = ("Block", "Filesystem")
NODE_OPERATORS = ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")
PV_PROTECTION = "kubernetes.io/pv-protection"
PVC_PROTECTION = "kubernetes.io/pvc-protection"
# The volume sources a PV may name (PersistentVolumeSource); one and only one.
VOLUME_SOURCES = (  # in the order the API server checks them (it names the second found)
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "hostPath",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "local",
    "storageos",
    "csi",
)
MAX_CSI_DRIVER_NAME = 63


def _csi_driver(name: str) -> list[FieldError]:
    """ValidateCSIDriverName: required, at most 63 bytes, a DNS-1123 subdomain."""
    if not name:
        return [required("spec.csi.driver")]
    if len(name) > MAX_CSI_DRIVER_NAME:
        return [rules.too_long("spec.csi.driver", MAX_CSI_DRIVER_NAME)]
    return invalid("spec.csi.driver", name, rules.dns1123_subdomain(name.lower()))


def _access_modes(modes: Any, path: str, detail: str) -> list[FieldError]:
    if not modes:
        return [required(path, detail)]
    errors = [e for mode in modes for e in rules.supported(path, mode, ACCESS_MODES)]
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        errors.append(
            FieldError("Forbidden", path, "may not use ReadWriteOncePod with other access modes")
        )
    return errors


def _positive_storage(raw: Any, path: str) -> list[FieldError]:
    return invalid(
        path, str(raw), ["must be greater than zero"] if rules.quantity(raw) <= 0 else []
    )


def _node_affinity(affinity: Any, path: str) -> list[FieldError]:
    if affinity is None:
        return []
    if not (affinity or {}).get("required"):
        return [required(f"{path}.required", "must specify required node constraints")]
    terms = affinity["required"].get("nodeSelectorTerms") or []
    at = f"{path}.required.nodeSelectorTerms"
    if not terms:
        return [required(at, "must have at least one node selector term")]
    errors = []
    for index, term in enumerate(terms):
        for number, expression in enumerate(term.get("matchExpressions") or []):
            here, key = f"{at}[{index}].matchExpressions[{number}]", expression.get("key", "")
            operator, values = expression.get("operator"), expression.get("values") or []
            errors += invalid(f"{here}.key", key, rules.qualified_name(key))
            errors += rules.supported(f"{here}.operator", operator, NODE_OPERATORS)
            if operator in ("In", "NotIn") and not values:
                errors.append(
                    required(
                        f"{here}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                    )
                )
            elif operator in ("Exists", "DoesNotExist") and values:
                errors.append(
                    FieldError(
                        "Forbidden",
                        f"{here}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
    return errors


def persistent_volume(obj: Obj) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errors = _access_modes(spec.get("accessModes"), "spec.accessModes", "")
    capacity = spec.get("capacity") or {}
    if not capacity:
        errors.append(required("spec.capacity"))
    if "storage" not in capacity or len(capacity) > 1:
        errors += rules.supported("spec.capacity", json.dumps(capacity), ("storage",))
    for name, raw in capacity.items():
        errors += _positive_storage(raw, f"spec.capacity[{name}]")
    errors += rules.supported(
        "spec.persistentVolumeReclaimPolicy",
        spec.get("persistentVolumeReclaimPolicy"),
        RECLAIM_POLICIES,
    )
    errors += rules.supported("spec.volumeMode", spec.get("volumeMode"), VOLUME_MODES)
    sources = [s for s in VOLUME_SOURCES if spec.get(s) is not None]
    if not sources:
        errors.append(required("spec", "must specify a volume type"))
    elif len(sources) > 1:
        errors.append(
            FieldError("Forbidden", f"spec.{sources[1]}", "may not specify more than 1 volume type")
        )
    if (csi := spec.get("csi")) is not None:
        driver, handle = csi.get("driver") or "", csi.get("volumeHandle") or ""
        errors += _csi_driver(driver)
        errors += [] if handle else [required("spec.csi.volumeHandle")]
    if class_name := spec.get("storageClassName"):
        errors += invalid("spec.storageClassName", class_name, rules.dns1123_subdomain(class_name))
    return errors + _node_affinity(spec.get("nodeAffinity"), "spec.nodeAffinity")


def persistent_volume_claim(obj: Obj) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errors = _access_modes(
        spec.get("accessModes"), "spec.accessModes", "at least 1 access mode is required"
    )
    requests = (spec.get("resources") or {}).get("requests") or {}
    if "storage" not in requests:
        errors.append(required("spec.resources[storage]"))
    else:
        errors += _positive_storage(requests["storage"], "spec.resources[storage]")
    errors += rules.supported("spec.volumeMode", spec.get("volumeMode"), VOLUME_MODES)
    if class_name := spec.get("storageClassName"):
        errors += invalid("spec.storageClassName", class_name, rules.dns1123_subdomain(class_name))
    return errors


def quantities(obj: Obj) -> None:
    """Decode every quantity first: one that does not parse is a 400, not a 422."""
    spec = obj.get("spec") or {}
    values = [
        *(spec.get("capacity") or {}).values(),
        *((spec.get("resources") or {}).get("requests") or {}).values(),
        *((spec.get("resources") or {}).get("limits") or {}).values(),
    ]
    for value in values:
        rules.quantity(value)


# -- updates -------------------------------------------------------------------------------
def _diff(old: Any, new: Any) -> str:
    """A readable diff of two specs (the API server prints Go's cmp.Diff of its structs)."""
    lines = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            lines.append(
                f"-  {key}: {json.dumps(old.get(key))}\n+  {key}: {json.dumps(new.get(key))}"
            )
    return "\n".join(lines)


def persistent_volume_update(new: Obj, old: Obj) -> list[FieldError]:
    spec, before = new.get("spec") or {}, old.get("spec") or {}
    errors = []
    source = {s: spec.get(s) for s in VOLUME_SOURCES if spec.get(s) is not None}
    old_source = {s: before.get(s) for s in VOLUME_SOURCES if before.get(s) is not None}
    if source != old_source:
        errors.append(
            FieldError(
                "Forbidden",
                "spec.persistentvolumesource",
                "spec.persistentvolumesource is immutable after creation\n"
                + _diff(old_source, source),
            )
        )
    for field in ("volumeMode", "nodeAffinity"):
        if before.get(field) is not None and spec.get(field) != before.get(field):
            errors += invalid(f"spec.{field}", json.dumps(spec.get(field)), ["field is immutable"])
    return errors


def persistent_volume_claim_update(new: Obj, old: Obj) -> list[FieldError]:
    spec = {k: v for k, v in (new.get("spec") or {}).items() if v is not None}
    before = {k: v for k, v in (old.get("spec") or {}).items() if v is not None}
    for field, may_change in (
        ("volumeName", not before.get("volumeName")),  # the binder may set it once
        ("resources", (old.get("status") or {}).get("phase") == "Bound"),
    ):
        if may_change:
            before.pop(field, None)
            if field in spec:
                before[field] = spec[field]
    if spec != before:
        return [
            FieldError(
                "Forbidden",
                "spec",
                "spec is immutable after creation except resources.requests and "
                "volumeAttributesClassName for bound claims\n" + _diff(before, spec),
            )
        ]
    return []


def refuse_resize(new: Obj, old: Obj) -> None:
    """The PersistentVolumeClaimResize admission plugin: only a claim whose storage class
    allows expansion may grow; ours name no class (statically provisioned)."""
    requests = ((new.get("spec") or {}).get("resources") or {}).get("requests") or {}
    before = ((old.get("spec") or {}).get("resources") or {}).get("requests") or {}
    try:
        grows = rules.quantity(requests.get("storage", 0)) > rules.quantity(
            before.get("storage", 0)
        )
    except Undecodable:
        return
    if grows and not (old.get("spec") or {}).get("storageClassName"):
        name = old["metadata"]["name"]
        raise ApiError(
            403,
            "Forbidden",
            f'persistentvolumeclaims "{name}" is forbidden: only dynamically provisioned pvc can '
            "be resized and the storageclass that provisions the pvc must support resize",
            name,
            "persistentvolumeclaims",
        )


# -- what the API server fills in on create -------------------------------------------------
def default(resource: str, obj: Obj) -> None:
    spec = obj.setdefault("spec", {})
    spec.setdefault("volumeMode", "Filesystem")
    finalizers = obj["metadata"].setdefault("finalizers", [])
    if resource == "persistentvolumes":
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        protection = PV_PROTECTION
    else:
        protection = PVC_PROTECTION
    if protection not in finalizers:
        finalizers.append(protection)
    obj["status"] = {"phase": "Pending"}
