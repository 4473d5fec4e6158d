"""What the scheduler's VolumeBinding plugin and the kubelet's volume manager check about a
pod's PersistentVolumeClaims, as pure functions over the claims and volumes.

Scheduler (a pod not pinned with nodeName): every claim must exist, not be Terminating,
and be Bound (ours have no storage class, so they bind at once: an unbound one is an
"unbound immediate" claim); a node is filtered out when a bound volume's required node
affinity does not match its labels. Kubelet (every pod on a node, pinned ones included:
they skip the scheduler): the same claim checks, then the volume's node affinity against
its own node, before any container starts.
"""

from __future__ import annotations

from typing import Any

from localcloud.kubernetes import selectors

Obj = dict[str, Any]
Claims = dict[tuple[str, str], Obj]  # (namespace, name) -> claim
Volumes = dict[str, Obj]  # name -> PersistentVolume


def claim_names(pod: Obj) -> list[str]:
    return [
        volume["persistentVolumeClaim"]["claimName"]
        for volume in pod["spec"].get("volumes") or []
        if (volume.get("persistentVolumeClaim") or {}).get("claimName")
    ]


def uses_claim(pod: Obj, namespace: str, name: str) -> bool:
    return pod["metadata"].get("namespace") == namespace and name in claim_names(pod)


def _claims_of(pod: Obj, claims: Claims) -> list[tuple[str, Obj | None]]:
    namespace = pod["metadata"]["namespace"]
    return [(name, claims.get((namespace, name))) for name in claim_names(pod)]


def claim_problem(pod: Obj, claims: Claims) -> str | None:
    """Why the VolumeBinding plugin's PreFilter refuses the pod on every node, or None."""
    unbound = False
    for name, claim in _claims_of(pod, claims):
        if claim is None:
            return f'persistentvolumeclaim "{name}" not found'
        if claim["metadata"].get("deletionTimestamp"):
            return f'persistentvolumeclaim "{name}" is being deleted'
        unbound = unbound or claim["status"].get("phase") != "Bound"
    return "pod has unbound immediate PersistentVolumeClaims" if unbound else None


def volume_fits_node(volume: Obj, node: Obj) -> bool:
    """The PersistentVolume's required node affinity admits the node (no affinity: any)."""
    required = ((volume["spec"].get("nodeAffinity") or {}).get("required")) or {}
    terms = required.get("nodeSelectorTerms") or []
    labels = node["metadata"].get("labels") or {}
    return not terms or any(
        all(selectors.expression_matches(labels, e) for e in term.get("matchExpressions") or [])
        for term in terms
    )


def bound_volumes(pod: Obj, claims: Claims, volumes: Volumes) -> list[Obj]:
    names = [
        claim["spec"].get("volumeName")
        for _, claim in _claims_of(pod, claims)
        if claim is not None and claim["status"].get("phase") == "Bound"
    ]
    return [volumes[name] for name in names if name in volumes]


def node_conflict(pod: Obj, node: Obj, claims: Claims, volumes: Volumes) -> bool:
    """The VolumeBinding plugin's Filter: a bound volume that cannot reach this node."""
    return not all(volume_fits_node(v, node) for v in bound_volumes(pod, claims, volumes))


def mount_problem(pod: Obj, node: Obj, claims: Claims, volumes: Volumes) -> str | None:
    """The kubelet's FailedMount message for a pod whose claims it cannot mount, or None."""
    namespace = pod["metadata"]["namespace"]
    volume_names = [
        v["name"] for v in pod["spec"].get("volumes") or [] if v.get("persistentVolumeClaim")
    ]
    prefix = (
        f"Unable to attach or mount volumes: unmounted volumes=[{' '.join(volume_names)}], "
        f"unattached volumes=[{' '.join(volume_names)}]: "
    )
    for name, claim in _claims_of(pod, claims):
        if claim is None:
            return (
                f"{prefix}error processing PVC {namespace}/{name}: failed to fetch PVC from API "
                f'server: persistentvolumeclaims "{name}" not found'
            )
        if claim["status"].get("phase") != "Bound":
            return f"{prefix}error processing PVC {namespace}/{name}: PVC is not bound"
        volume_name = claim["spec"].get("volumeName", "")
        if volume_name not in volumes:
            return (
                f"{prefix}error processing PVC {namespace}/{name}: failed to fetch PV "
                f'{volume_name} from API server: persistentvolumes "{volume_name}" not found'
            )
        if not volume_fits_node(volumes[volume_name], node):
            return (
                f'MountVolume.NodeAffinity check failed for volume "{volume_name}" : '
                "no matching NodeSelectorTerms"
            )
    return None
