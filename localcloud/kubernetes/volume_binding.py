"""kube-controller-manager's persistent volume controllers, for statically provisioned
volumes: the binder, the reclaimer, and the pvc-protection and pv-protection controllers.

- A new PersistentVolume becomes Available.
- A claim naming a volume (`spec.volumeName`) binds to it when the volume has no other
  claim, is not being deleted, offers at least the storage requested, has the claim's
  storage class and volume mode, and every access mode the claim asks for; both turn
  Bound and the volume gets a `claimRef`. Otherwise the claim stays Pending, with the
  binder's VolumeMismatch / FailedBinding event. A claim without `volumeName` is not
  matched to a volume here (we never send one): it stays Pending.
- A Bound volume whose claim is gone is Released (Retain) or, for Delete, Failed: no
  deleter exists for a statically provisioned CSI volume. A Bound claim whose volume is
  gone is Lost.
- A Terminating claim keeps its `kubernetes.io/pvc-protection` finalizer while a pod that
  has not finished uses it (Terminating pods included); a Terminating volume keeps
  `kubernetes.io/pv-protection` while it is Bound.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from localcloud.kubernetes import events, volume_scheduling
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.rules import quantity
from localcloud.kubernetes.storage_validation import PV_PROTECTION, PVC_PROTECTION
from localcloud.kubernetes.store import ObjectStore
from localcloud.kubernetes.timestamps import now

Obj = dict[str, Any]
COMPONENT = "persistentvolume-controller"
FINISHED = ("Succeeded", "Failed")


def mismatch(volume: Obj, claim: Obj) -> str | None:
    """checkVolumeSatisfyClaim: why the volume cannot serve the claim, or None."""
    if volume["metadata"].get("deletionTimestamp"):
        return f'the volume is marked for deletion "{volume["metadata"]["name"]}"'
    wanted = quantity(claim["spec"]["resources"]["requests"]["storage"])
    if quantity(volume["spec"]["capacity"]["storage"]) < wanted:
        return "requested PV is too small"
    if (volume["spec"].get("storageClassName") or "") != (
        claim["spec"].get("storageClassName") or ""
    ):
        return "storageClassName does not match"
    if volume["spec"].get("volumeMode") != claim["spec"].get("volumeMode"):
        return "incompatible volumeMode"
    if not set(claim["spec"]["accessModes"]) <= set(volume["spec"]["accessModes"]):
        return "incompatible accessMode"
    return None


def _refers_to(volume: Obj, claim: Obj) -> bool:
    ref = volume["spec"].get("claimRef") or {}
    meta = claim["metadata"]
    return (
        ref.get("name") == meta["name"]
        and ref.get("namespace") == meta["namespace"]
        and ref.get("uid", meta["uid"]) in ("", meta["uid"])
    )


class PersistentVolumeController:
    def __init__(self, store: ObjectStore):
        self.store = store
        self._said: set[tuple[str, str, str]] = set()  # (uid, reason, message) recorded

    def step(self, pods: list[Obj]) -> None:
        volumes = {
            v["metadata"]["name"]: v
            for v in self.store.list("persistentvolumes", None, frozen=True)["items"]
        }
        claims = self.store.list("persistentvolumeclaims", None, frozen=True)["items"]
        by_key = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in claims}
        for volume in volumes.values():  # first: a volume bound below is not stale here
            self._sync_volume(volume, by_key)
        for claim in claims:
            phase = claim["status"].get("phase")
            if phase == "Pending" and claim["spec"].get("volumeName"):
                self._bind(claim, volumes.get(claim["spec"]["volumeName"]))
            elif phase == "Bound" and claim["spec"].get("volumeName") not in volumes:
                self._claim_lost(claim)
        self._release_protection(claims, volumes, pods)

    # -- the binder --------------------------------------------------------------------
    def _bind(self, claim: Obj, volume: Obj | None) -> None:
        if volume is None or claim["metadata"].get("deletionTimestamp"):
            return  # "volume requested and not found, will try again next time"
        name = volume["metadata"]["name"]
        if volume["spec"].get("claimRef") and not _refers_to(volume, claim):
            self._event(
                claim,
                "Warning",
                "FailedBinding",
                f'volume "{name}" already bound to a different claim.',
            )
            return
        if reason := mismatch(volume, claim):
            self._event(
                claim,
                "Warning",
                "VolumeMismatch",
                f'Cannot bind to requested volume "{name}": {reason}',
            )
            return
        meta = claim["metadata"]

        def bind_volume(pv: Obj) -> None:
            if pv["spec"].get("claimRef") and not _refers_to(pv, claim):  # taken meanwhile
                raise ApiError(409, "Conflict", f'volume "{name}" already bound')
            pv["spec"]["claimRef"] = {
                "kind": "PersistentVolumeClaim",
                "apiVersion": "v1",
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta["uid"],
                "resourceVersion": meta["resourceVersion"],
            }
            pv["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bound-by-controller"] = (
                "yes"
            )
            _set_phase(pv, "Bound")

        def bind_claim(pvc: Obj) -> None:
            pvc["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
            pvc["status"].update(
                phase="Bound",
                accessModes=list(volume["spec"]["accessModes"]),
                capacity=dict(volume["spec"]["capacity"]),
            )

        with contextlib.suppress(ApiError):  # taken by another claim, or gone: next pass
            self.store.update("persistentvolumes", "", name, bind_volume)
            self.store.update("persistentvolumeclaims", meta["namespace"], meta["name"], bind_claim)

    def _claim_lost(self, claim: Obj) -> None:
        self._change("persistentvolumeclaims", claim, lambda c: c["status"].update(phase="Lost"))
        self._event(
            claim,
            "Warning",
            "ClaimLost",
            "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
        )

    # -- volumes -------------------------------------------------------------------------
    def _sync_volume(self, volume: Obj, claims: dict[tuple[str, str], Obj]) -> None:
        """syncVolume: a volume without a claim (new, or its `claimRef` cleared by an
        admin) is Available; one whose claim is gone is reclaimed by its policy."""
        phase, ref = volume["status"].get("phase"), volume["spec"].get("claimRef")
        unused = not ref and phase != "Available"
        prebound = bool(ref) and not ref.get("uid") and phase == "Pending"  # a claim to come
        if unused or prebound:
            self._change("persistentvolumes", volume, _available_if_unchanged(volume))
        if not ref or not ref.get("uid"):
            return
        claim = claims.get((ref.get("namespace", ""), ref.get("name", "")))
        if phase in ("Released", "Failed") or (
            claim is not None and claim["metadata"]["uid"] == ref["uid"]
        ):
            return
        policy = volume["spec"].get("persistentVolumeReclaimPolicy")
        if policy == "Retain":
            self._change("persistentvolumes", volume, _released_if_unchanged(volume))
            return
        message = (
            "No recycler plugin found for the volume!"
            if policy == "Recycle"
            else f'error getting deleter volume plugin for volume "{volume["metadata"]["name"]}": '
            "no deletable volume plugin matched"
        )
        self._change("persistentvolumes", volume, _released_if_unchanged(volume, "Failed", message))
        reason = "VolumeFailedRecycle" if policy == "Recycle" else "VolumeFailedDelete"
        self._event(volume, "Warning", reason, message)

    # -- protection ---------------------------------------------------------------------
    def _release_protection(
        self, claims: list[Obj], volumes: dict[str, Obj], pods: list[Obj]
    ) -> None:
        for claim in claims:
            meta = claim["metadata"]
            if not meta.get("deletionTimestamp") or PVC_PROTECTION not in (
                meta.get("finalizers") or []
            ):
                continue
            if not any(
                volume_scheduling.uses_claim(pod, meta["namespace"], meta["name"])
                and pod["status"].get("phase") not in FINISHED
                for pod in pods
            ):
                self._change("persistentvolumeclaims", claim, _without(PVC_PROTECTION))
        for volume in volumes.values():
            meta = volume["metadata"]
            if (
                meta.get("deletionTimestamp")
                and PV_PROTECTION in (meta.get("finalizers") or [])
                and volume["status"].get("phase") != "Bound"
            ):
                self._change("persistentvolumes", volume, _unprotect_unbound_volume)

    # -- helpers ------------------------------------------------------------------------
    def _change(self, resource: str, obj: Obj, change: Callable[[Obj], None]) -> None:
        meta = obj["metadata"]
        with contextlib.suppress(ApiError):  # gone meanwhile
            self.store.update(resource, meta.get("namespace", ""), meta["name"], change)

    def _event(self, obj: Obj, kind: str, reason: str, message: str) -> None:
        """Once per object and message (the real binder repeats it every resync)."""
        said = (obj["metadata"]["uid"], reason, message)
        if said not in self._said:
            self._said.add(said)
            events.record(self.store, obj, kind, reason, message, COMPONENT)


def _set_phase(volume: Obj, phase: str, message: str | None = None) -> None:
    volume["status"] = {"phase": phase, "lastPhaseTransitionTime": now()}
    if message:
        volume["status"]["message"] = message


def _available_if_unchanged(seen: Obj) -> Callable[[Obj], None]:
    def available(volume: Obj) -> None:
        if volume["spec"].get("claimRef") == seen["spec"].get("claimRef"):  # not bound since
            _set_phase(volume, "Available")

    return available


def _released_if_unchanged(
    seen: Obj, phase: str = "Released", message: str | None = None
) -> Callable[[Obj], None]:
    def release(volume: Obj) -> None:
        if volume["spec"].get("claimRef") == seen["spec"].get("claimRef"):
            _set_phase(volume, phase, message)

    return release


def _unprotect_unbound_volume(volume: Obj) -> None:
    if volume["status"].get("phase") != "Bound":  # not bound since the controller looked
        _without(PV_PROTECTION)(volume)


def _without(finalizer: str) -> Callable[[Obj], None]:
    def remove(obj: Obj) -> None:
        obj["metadata"]["finalizers"] = [f for f in obj["metadata"]["finalizers"] if f != finalizer]

    return remove
