"""The kubelet's events about a pod's containers, read off each of its status writes (what
changed between the pod before and after), as the kubelet records them while it runs them:

- a container run that began (a status newly running or terminated, or a new restartCount):
  `Pulling`/`Pulled` (`Successfully pulled image ...` the first time the node needs the image,
  or every time with imagePullPolicy Always; else `Container image ... already present on
  machine`), `Created`, then `Started`;
- a container that could not start (newly terminated with StartError): a Warning `Failed`
  with containerd's error;
- a container that newly waits in CrashLoopBackOff: a Warning `BackOff`;
- a pod the kubelet failed with a reason (rejected at admission: `OutOfnvidia.com/gpu`,
  `NodeAffinity`, ...; or `Evicted`): a Warning with that reason and message;
- and (`killing`, from pod_termination.py) a Terminating pod's running containers: `Killing`.

`plan` decides (pure); `KubeletEvents.after_write` records. A container killed at its memory
limit gets OOMKilled as its terminated reason and no event of its own, as on a real node
(the kubelet's OOM watcher records `SystemOOM` on the node only for a system-wide OOM); the
Warning that follows it is the BackOff before its restart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from localcloud.kubernetes import events
from localcloud.kubernetes.init_containers import CRASH_LOOP
from localcloud.kubernetes.object_defaults import pull_policy
from localcloud.kubernetes.store import ObjectStore

Obj = dict[str, Any]
COMPONENT = "kubelet"
_STATUSES = (("initContainerStatuses", "initContainers"), ("containerStatuses", "containers"))


@dataclass(frozen=True)
class ContainerEvent:
    type: str
    reason: str
    message: str
    field_path: str  # "": about the pod itself


def runs_begun(before: Obj, after: Obj) -> list[tuple[str, Obj, Obj]]:
    """The container runs a status write began: (field path, container, status) of each
    status newly running or terminated, or with a new restartCount."""
    begun = []
    for statuses, containers in _STATUSES:
        specs = {c["name"]: c for c in after["spec"].get(containers) or []}
        was = {s["name"]: s for s in (before.get("status") or {}).get(statuses) or []}
        for status in after["status"].get(statuses) or []:
            previous = was.get(status["name"], {})
            same_run = previous.get("restartCount", 0) == status.get("restartCount", 0)
            if _ran(status.get("state") or {}) and not (
                _ran(previous.get("state") or {}) and same_run
            ):
                at = f"spec.{containers}{{{status['name']}}}"
                begun.append((at, specs.get(status["name"], {}), status))
    return begun


def plan(before: Obj, after: Obj, images_on_node: set[str]) -> list[ContainerEvent]:
    """The events a status write from `before` to `after` shows; `images_on_node` (the
    images the node has pulled) gains those this write pulled."""
    planned: list[ContainerEvent] = []
    for at, container, status in runs_begun(before, after):
        planned += _run_began(container, status.get("state") or {}, at, images_on_node)
    meta, status_now = after["metadata"], after["status"]
    if (
        status_now.get("phase") == "Failed"
        and status_now.get("reason")
        and (before.get("status") or {}).get("phase") != "Failed"
    ):  # rejected at admission (OutOfnvidia.com/gpu, NodeAffinity ...) or Evicted
        reason, message = status_now["reason"], status_now.get("message", "")
        planned.append(ContainerEvent("Warning", reason, message, ""))
    for statuses, containers in _STATUSES:
        was = {s["name"]: s for s in (before.get("status") or {}).get(statuses) or []}
        for status in after["status"].get(statuses) or []:
            name, previous = status["name"], was.get(status["name"], {})
            state, earlier = status.get("state") or {}, previous.get("state") or {}
            same_run = previous.get("restartCount", 0) == status.get("restartCount", 0)
            at = f"spec.{containers}{{{name}}}"
            ended = state.get("terminated") or {}
            if ended.get("reason") == "StartError" and not ("terminated" in earlier and same_run):
                message = f"Error: {ended.get('message', '')}"
                planned.append(ContainerEvent("Warning", "Failed", message, at))
            waiting = (state.get("waiting") or {}).get("reason")
            waited = (earlier.get("waiting") or {}).get("reason")
            if waiting == CRASH_LOOP and not (waited == CRASH_LOOP and same_run):
                pod = f"{meta['name']}_{meta['namespace']}({meta['uid']})"
                message = f"Back-off restarting failed container {name} in pod {pod}"
                planned.append(ContainerEvent("Warning", "BackOff", message, at))
    return planned


def _ran(state: Obj) -> bool:
    return "running" in state or "terminated" in state


def _run_began(container: Obj, state: Obj, at: str, images: set[str]) -> list[ContainerEvent]:
    image, name = container.get("image", ""), container.get("name", "")
    policy = container.get("imagePullPolicy") or pull_policy(image)
    if image in images and policy != "Always":
        pulled = [
            ContainerEvent(
                "Normal", "Pulled", f'Container image "{image}" already present on machine', at
            )
        ]
    else:
        images.add(image)
        pulled = [
            ContainerEvent("Normal", "Pulling", f'Pulling image "{image}"', at),
            ContainerEvent(
                "Normal",
                "Pulled",
                f'Successfully pulled image "{image}" in 0s (0s including waiting)',
                at,
            ),
        ]
    created = ContainerEvent("Normal", "Created", f"Created container: {name}", at)
    if (state.get("terminated") or {}).get("reason") == "StartError":
        return [*pulled, created]  # then Failed (`plan`)
    return [*pulled, created, ContainerEvent("Normal", "Started", f"Started container {name}", at)]


class KubeletEvents:
    """Records the kubelet's container events; remembers the images each node pulled."""

    def __init__(self, store: ObjectStore):
        self._store = store
        self._images: dict[str, set[str]] = {}  # node -> images it has

    def forget_nodes_but(self, nodes: set[str]) -> None:
        for node in self._images.keys() - nodes:
            del self._images[node]

    def after_write(self, before: Obj, after: Obj) -> None:
        node = after["spec"].get("nodeName") or ""
        for event in plan(before, after, self._images.setdefault(node, set())):
            events.record(
                self._store,
                after,
                event.type,
                event.reason,
                event.message,
                COMPONENT,
                host=node,
                field_path=event.field_path,
            )


def killing(store: ObjectStore, pod: Obj) -> None:
    """A Terminating pod's running containers are being stopped (`Killing`)."""
    node = pod["spec"].get("nodeName") or ""
    for status in pod["status"].get("containerStatuses") or []:
        if "running" in (status.get("state") or {}):
            events.record(
                store,
                pod,
                "Normal",
                "Killing",
                f"Stopping container {status['name']}",
                COMPONENT,
                host=node,
                field_path=f"spec.containers{{{status['name']}}}",
            )
