"""The DaemonSet controller (kube-controller-manager's `daemon` controller), in its
essentials: every DaemonSet runs one pod on each node its template fits (node selector,
required node affinity, and no NoSchedule or NoExecute taint its tolerations leave out), a
node that joins later gets one, a node that leaves or stops fitting loses its pod, and a
changed template replaces the pods, at most `maxUnavailable` of them at a time (OnDelete:
only those deleted by hand). The pods go through the stand-in's kubelet like any other, so
their images land in the nodes' image stores (image_pulls.py): what the pre-puller relies on.

The pods carry the template's labels plus `controller-revision-hash` (a hash of the
template) and `pod-template-generation`, and an owner reference to their DaemonSet (the
DaemonSet deleted: its pods are deleted too, as the garbage collector does). Unlike the real
controller (which leaves binding to the scheduler through a `metadata.name` node-affinity
term since 1.12), this one names the node in `spec.nodeName`, as it did before: the same
pod on the same node, without a field selector the stand-in's scheduler does not read. The
status counts what the real one counts (desired, current, ready, updated, available,
misscheduled; observedGeneration)."""

from __future__ import annotations

import hashlib
import json
import logging
import math
from typing import Any

from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.nodes import node_accepts, untolerated_taints
from localcloud.kubernetes.store import ObjectStore

log = logging.getLogger("localcloud.daemonsets")
Obj = dict[str, Any]
HASH_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"


def template_hash(template: Obj) -> str:
    text = json.dumps(template, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def fits(node: Obj, template: Obj) -> bool:
    """Whether the DaemonSet's pod belongs on `node` (`NodeShouldRunDaemonPod`)."""
    pod = {"spec": template.get("spec") or {}}
    return node_accepts(node, pod) and not untolerated_taints(
        node, pod, ("NoSchedule", "NoExecute")
    )


def _ready(pod: Obj) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or []
    )


def _max_unavailable(daemon_set: Obj, desired: int) -> int:
    strategy = daemon_set["spec"].get("updateStrategy") or {}
    value = (strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1)
    if isinstance(value, str):  # a percentage of the desired pods, rounded up
        return max(1, math.ceil(desired * int(value.rstrip("%")) / 100)) if desired else 0
    return max(1, int(value))


class DaemonSets:
    """One pass over every DaemonSet per `step` (the simulated cluster's loop)."""

    def __init__(self, store: ObjectStore):
        self._store = store
        self._any = False  # a DaemonSet was seen: its pods may need collecting

    def step(self) -> None:
        daemon_sets = self._store.list("daemonsets", None, frozen=True)["items"]
        if not daemon_sets and not self._any:
            return  # the usual cluster: nothing to do, and no pod list on every tick
        self._any = bool(daemon_sets)
        pods = self._store.list("pods", None, frozen=True)["items"]
        owned: dict[str, list[Obj]] = {}
        for pod in pods:
            for owner in pod["metadata"].get("ownerReferences") or []:
                if owner.get("kind") == "DaemonSet" and owner.get("controller"):
                    owned.setdefault(owner["uid"], []).append(pod)
        live = {d["metadata"]["uid"] for d in daemon_sets}
        for uid, orphans in owned.items():  # the garbage collector's part
            if uid not in live:
                for pod in orphans:
                    self._delete(pod)
        if not daemon_sets:
            return
        nodes = self._store.list("nodes", None, frozen=True)["items"]
        for daemon_set in daemon_sets:
            try:
                self._sync(daemon_set, nodes, owned.get(daemon_set["metadata"]["uid"], []))
            except ApiError as error:  # a conflict or a refusal: the next pass tries again
                log.warning("daemonset %s: %s", daemon_set["metadata"]["name"], error)

    def _sync(self, daemon_set: Obj, nodes: list[Obj], pods: list[Obj]) -> None:
        template = daemon_set["spec"]["template"]
        revision = template_hash(template)
        wanted = {n["metadata"]["name"] for n in nodes if fits(n, template)}
        by_node: dict[str, list[Obj]] = {}
        for pod in pods:
            by_node.setdefault(pod["spec"].get("nodeName") or "", []).append(pod)
        for node, on_node in by_node.items():
            if node not in wanted:  # the node left, or no longer fits
                for pod in on_node:
                    self._delete(pod)
        on_delete = (daemon_set["spec"].get("updateStrategy") or {}).get("type") == "OnDelete"
        serving = {
            node
            for node in wanted
            if any(
                _ready(p) and not p["metadata"].get("deletionTimestamp")
                for p in by_node.get(node, [])
            )
        }
        # Old pods are replaced while fewer than maxUnavailable nodes are without a ready pod.
        budget = _max_unavailable(daemon_set, len(wanted)) - (len(wanted) - len(serving))
        for node in sorted(wanted):
            on_node = by_node.get(node, [])
            if not on_node:
                self._create(daemon_set, node, revision)
                continue
            old = [
                p
                for p in on_node
                if p["metadata"].get("labels", {}).get(HASH_LABEL) != revision
                and not p["metadata"].get("deletionTimestamp")
            ]
            if not old or on_delete:
                continue
            if node not in serving or budget > 0:  # an unready pod costs nothing to replace
                for pod in old:
                    self._delete(pod)
                budget -= node in serving
        self._status(daemon_set, wanted, pods, revision)

    def _create(self, daemon_set: Obj, node: str, revision: str) -> None:
        metadata = daemon_set["metadata"]
        template = json.loads(json.dumps(daemon_set["spec"]["template"]))
        labels = {
            **(template["metadata"].get("labels") or {}),
            HASH_LABEL: revision,
            GENERATION_LABEL: str(metadata.get("generation", 1)),
        }
        pod = {
            "metadata": {
                "generateName": f"{metadata['name']}-",
                "labels": labels,
                "annotations": template["metadata"].get("annotations") or {},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "DaemonSet",
                        "name": metadata["name"],
                        "uid": metadata["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {**template["spec"], "nodeName": node},
        }
        self._store.create("pods", metadata["namespace"], pod)

    def _delete(self, pod: Obj) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            return
        try:
            self._store.delete("pods", pod["metadata"]["namespace"], pod["metadata"]["name"])
        except ApiError as error:
            if error.code != 404:
                raise

    def _status(self, daemon_set: Obj, wanted: set[str], pods: list[Obj], revision: str) -> None:
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        on_wanted = [p for p in live if p["spec"].get("nodeName") in wanted]
        updated = [p for p in on_wanted if p["metadata"]["labels"].get(HASH_LABEL) == revision]
        ready = sum(_ready(p) for p in on_wanted)
        status = {
            "currentNumberScheduled": len({p["spec"]["nodeName"] for p in on_wanted}),
            "desiredNumberScheduled": len(wanted),
            "numberMisscheduled": len({p["spec"].get("nodeName") for p in live} - wanted),
            "numberReady": ready,
            "numberAvailable": ready,
            "updatedNumberScheduled": len(updated),
            "observedGeneration": daemon_set["metadata"].get("generation", 1),
        }
        if ready < len(wanted):
            status["numberUnavailable"] = len(wanted) - ready
        if status != daemon_set.get("status"):
            self._store.replace(
                "daemonsets",
                daemon_set["metadata"]["namespace"],
                daemon_set["metadata"]["name"],
                {**daemon_set, "status": status},
                subresource="status",
            )
