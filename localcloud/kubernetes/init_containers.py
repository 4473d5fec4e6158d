"""Init containers as the kubelet runs them: in order, each to completion, before any of the
pod's containers starts. While they run the pod is Pending, its `Initialized` condition False
(ContainersNotInitialized) and its containers waiting (PodInitializing); each that exits 0 is
`state.terminated` {exitCode 0, reason Completed, message}; then the containers start. One
that fails is `terminated` {exitCode, reason Error}, and the ones after it wait; what the
kubelet does next (restart it with a back-off, or fail the pod) is
`init_container_restarts.py`. A restarted one runs again; those that completed do not.

The stand-in has no container runtime, so it runs an init container's shell command for
real, in a sandbox whose content is the image's, as far as a test can say: a temporary
directory, `PATH` holding only the commands the image ships (stubs that exit 0; which images
ship `jupyter-lab` is the cluster's `jupyter_images`; an image in `shell_less_images` has no
shell, so a shell command cannot start: StartError, exit 128, as containerd reports a
missing executable), the container's literal `env`, and
`GPU_DEV_ROOT` naming the directory that stands for the container's `/` (the convention of
our pod scripts: startup.sh's sandbox test roots its writes the same way). The termination
message is the file at `terminationMessagePath` under that root, its last 4096 bytes, or
with `FallbackToLogsOnError` and a failure, the log's tail.

What runs: a served pod's init container runs only when its command is `bash`/`sh -c` with
the text of one of the pod scripts we ship (`gpudev/cluster/*.sh`); anything else completes
at once with no message. A restricted PATH is no sandbox (absolute paths and built-ins reach
the whole machine), and anyone who can reach the stand-in can create a pod, so it must never
run a command a client chose. Tests of the runner itself name the scripts they trust.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gpudev.cluster
from localcloud.kubernetes.storage_simulation import containers_waiting
from localcloud.kubernetes.timestamps import now

Obj = dict[str, Any]
SHELLS = {"bash": "/bin/bash", "sh": "/bin/sh"}
MAX_MESSAGE_BYTES = 4096  # the kubelet keeps this much of a termination message
MAX_LOG_MESSAGE_BYTES = 2048  # FallbackToLogsOnError: the log's last 2048 bytes ...
MAX_LOG_MESSAGE_LINES = 80  # ... or 80 lines, whichever is less
CRASH_LOOP = "CrashLoopBackOff"
RUN_SECONDS = 10.0  # an init container still running after this is killed (exit 137)
# The pod scripts we ship: the only commands a served pod's init container may run.
SHIPPED_SCRIPTS = frozenset(
    path.read_text() for path in Path(gpudev.cluster.__file__).parent.glob("*.sh")
)


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    message: str
    started_at: str
    finished_at: str
    reason: str = ""  # the kubelet's: Completed or Error unless said (StartError)
    log: str = ""  # what it printed (stdout and stderr), kept for pods/log


def completed(pod: Obj) -> bool:
    """Every init container exited 0: the pod's containers may start."""
    init = pod["spec"].get("initContainers") or []
    statuses = pod["status"].get("initContainerStatuses") or []
    return len(statuses) == len(init) and all(
        ((s.get("state") or {}).get("terminated") or {}).get("exitCode") == 0 for s in statuses
    )


def started(pod: Obj) -> bool:
    return bool(pod["status"].get("initContainerStatuses"))


def failed(pod: Obj) -> bool:
    """An init container has just failed (it is terminated, not yet restarted)."""
    return any(
        ((s.get("state") or {}).get("terminated") or {}).get("exitCode") not in (None, 0)
        for s in pod["status"].get("initContainerStatuses") or []
    )


def backing_off(pod: Obj) -> bool:
    """A failed init container waits for its restart (CrashLoopBackOff)."""
    return any(
        ((s.get("state") or {}).get("waiting") or {}).get("reason") == CRASH_LOOP
        for s in pod["status"].get("initContainerStatuses") or []
    )


def initializing(pod: Obj) -> None:
    """The kubelet admitted the pod and starts its first init container."""
    init = pod["spec"]["initContainers"]
    pending = ", ".join(c["name"] for c in init)
    moment = now()
    pod["status"].update(
        phase="Pending",
        startTime=moment,
        conditions=[
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": moment},
            *(
                {
                    "type": kind,
                    "status": "False",
                    "lastTransitionTime": moment,
                    "reason": reason,
                    "message": f"containers with incomplete status: [{pending}]",
                }
                for kind, reason in (
                    ("Initialized", "ContainersNotInitialized"),
                    ("ContainersReady", "ContainersNotReady"),
                    ("Ready", "ContainersNotReady"),
                )
            ),
        ],
        initContainerStatuses=[
            _status(pod, c, {"running": {"startedAt": moment}} if i == 0 else _initializing())
            for i, c in enumerate(init)
        ],
    )
    containers_waiting(pod, lambda _container: _initializing()["waiting"])


def run_all(
    pod: Obj,
    jupyter_images: frozenset[str],
    trusted: frozenset[str] = SHIPPED_SCRIPTS,
    shell_less_images: frozenset[str] = frozenset(),
) -> list[Outcome]:
    """Run the init containers that have not completed, in order, stopping at the first that
    fails; one whose script is not `trusted` (by default: ours) completes at once with no
    message, unrun. The outcomes are those of the containers from `first_pending(pod)`."""
    outcomes: list[Outcome] = []
    for container in pod["spec"]["initContainers"][first_pending(pod) :]:
        argv = [*(container.get("command") or []), *(container.get("args") or [])]
        if argv and container.get("image", "") in shell_less_images and shell_of(argv):
            outcome = cannot_start(argv[0])
        elif argv[-1:] and argv[-1] in trusted:
            outcome = run(container, jupyter_images)
        else:
            outcome = Outcome(0, "", now(), now())
        outcomes.append(outcome)
        if outcome.exit_code != 0:
            break
    return outcomes


def record(pod: Obj, outcomes: list[Outcome]) -> None:
    """The kubelet's status write once the init containers ran (`run_all`'s outcomes; the
    pod's containers are started by the caller when every one completed). A restarted
    container keeps its restartCount and lastState."""
    first = first_pending(pod)
    before = {s["name"]: s for s in pod["status"].get("initContainerStatuses") or []}
    statuses = []
    for index, container in enumerate(pod["spec"]["initContainers"]):
        previous = before.get(container["name"], {})
        if index < first:
            statuses.append(previous)
            continue
        if index - first >= len(outcomes):
            statuses.append(_status(pod, container, _initializing()))
            continue
        outcome = outcomes[index - first]
        terminated = {
            "exitCode": outcome.exit_code,
            "reason": outcome.reason or ("Completed" if outcome.exit_code == 0 else "Error"),
            "startedAt": outcome.started_at,
            "finishedAt": outcome.finished_at,
            "containerID": _container_id(pod, container),
        }
        if outcome.message:
            terminated["message"] = outcome.message
        status = _status(pod, container, {"terminated": terminated})
        status["ready"] = outcome.exit_code == 0  # a completed init container reads ready
        status["restartCount"] = previous.get("restartCount", 0)
        if previous.get("lastState"):
            status["lastState"] = previous["lastState"]
        statuses.append(status)
    pod["status"]["initContainerStatuses"] = statuses
    if any(o.exit_code != 0 for o in outcomes):
        name = pod["spec"]["initContainers"][first + len(outcomes) - 1]["name"]
        for condition in pod["status"].get("conditions") or []:
            if condition["type"] == "Initialized":
                condition["message"] = f"containers with incomplete status: [{name}]"


def run(container: Obj, jupyter_images: frozenset[str]) -> Outcome:
    began = now()
    argv = [*(container.get("command") or []), *(container.get("args") or [])]
    shell = shell_of(argv)
    if shell is None:  # not a shell script: nothing the stand-in can run
        return Outcome(0, "", began, now())
    root = Path(tempfile.mkdtemp(prefix="stand-in-init-"))
    try:
        image_bin = root / "image-bin"
        image_bin.mkdir()
        for command in _shipped(container.get("image", ""), jupyter_images):
            stub = image_bin / command
            stub.write_text("#!/bin/sh\nexit 0\n")
            stub.chmod(0o755)
        message_path = container.get("terminationMessagePath") or "/dev/termination-log"
        message_file = root / message_path.lstrip("/")
        message_file.parent.mkdir(parents=True, exist_ok=True)
        message_file.touch()
        env = {e["name"]: str(e["value"]) for e in container.get("env") or [] if "value" in e}
        env |= {"PATH": str(image_bin), "GPU_DEV_ROOT": str(root), "HOME": str(root)}
        try:
            done = subprocess.run(
                [shell, *argv[1:]],
                cwd=root,
                env=env,
                capture_output=True,
                timeout=RUN_SECONDS,
                check=False,
            )
            code, log = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as timeout:
            code, log = 137, (timeout.stdout or b"") + (timeout.stderr or b"")
        message = message_file.read_bytes()[-MAX_MESSAGE_BYTES:]
        if not message and code != 0:
            message = fallback_message(container, log)
        output = log.decode(errors="replace")
        return Outcome(code, message.decode(errors="replace"), began, now(), log=output)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def fallback_message(container: Obj, log: bytes) -> bytes:
    """A failed container's message when it wrote none: with `FallbackToLogsOnError`, its
    log's tail (the last 80 lines, at most 2048 bytes), else nothing."""
    if container.get("terminationMessagePolicy") != "FallbackToLogsOnError":
        return b""
    lines = log.splitlines(keepends=True)[-MAX_LOG_MESSAGE_LINES:]
    return b"".join(lines)[-MAX_LOG_MESSAGE_BYTES:]


def shell_of(argv: list[str]) -> str | None:
    """The shell the command runs (the host's bash or sh), None if it is not one."""
    return SHELLS.get(os.path.basename(argv[0])) if argv else None


def cannot_start(executable: str) -> Outcome:
    """What containerd reports when the image lacks the command's executable."""
    moment = now()
    message = (
        "failed to create containerd task: failed to create shim task: OCI runtime create "
        "failed: runc create failed: unable to start container process: exec: "
        f'"{executable}": stat {executable}: no such file or directory: unknown'
    )
    return Outcome(128, message, moment, moment, reason="StartError")


def first_pending(pod: Obj) -> int:
    """The index of the first init container that has not completed."""
    statuses = {s["name"]: s for s in pod["status"].get("initContainerStatuses") or []}
    for index, container in enumerate(pod["spec"]["initContainers"]):
        terminated = (statuses.get(container["name"], {}).get("state") or {}).get("terminated")
        if (terminated or {}).get("exitCode") != 0:
            return index
    return len(pod["spec"]["initContainers"])


def _shipped(image: str, jupyter_images: frozenset[str]) -> list[str]:
    """The commands on the image's PATH that the stand-in knows of."""
    return ["jupyter-lab"] if image in jupyter_images else []


def _initializing() -> Obj:
    return {"waiting": {"reason": "PodInitializing"}}


def _container_id(pod: Obj, container: Obj) -> str:
    return f"containerd://{pod['metadata']['uid']}-{container['name']}"


def _status(pod: Obj, container: Obj, state: Obj) -> Obj:
    return {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": f"docker-pullable://{container.get('image', '')}",
        "ready": False,
        "restartCount": 0,
        "started": "running" in state,
        "state": state,
    }
