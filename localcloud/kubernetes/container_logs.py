"""pods/log: what `kubectl logs` reads, as kube-apiserver and the kubelet serve it.

The kubelet keeps each container run's output (`ContainerLogs`, by pod uid, container and
run: its restartCount), written as the run begins (kubelet.py): an init container's real
output (the stand-in runs our pod scripts, init_containers.py); for a container running our
startup script (gpudev/cluster/startup.sh), the step lines it and sshd print on their way
to serving SSH; for a container with neither command nor args (the image's own entrypoint,
`reserve --preserve-entrypoint`), the line `entrypoint_output` stands in for what it prints;
for a Docker daemon (`reserve --docker`'s sidecar), the line dockerd prints as it serves;
for an image a test declares crashing, what it logs (`Crash.log`); nothing for a container
that could not start, or a command the stand-in does not run.

`read` answers as the two do: the API server checks the options (422 for a negative
tailLines, a limitBytes or sinceSeconds below 1) and the container (400 `container X is not
valid for pod Y`), and answers an unscheduled pod with nothing; the kubelet picks the run
(`previous`: the last terminated one) or says why there is none (400: waiting to start,
previous terminated container not found), then applies sinceSeconds, tailLines, timestamps
and limitBytes, in that order."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import gpudev.cluster
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.timestamps import format_time

Obj = dict[str, Any]
Line = tuple[str, str]  # (RFC 3339 time it was written, text without its newline)
STARTUP_SCRIPT = (Path(gpudev.cluster.__file__).parent / "startup.sh").read_text()
# What startup.sh prints on the dev image's first boot on a fresh home (its `step` lines,
# each stamped `<time> gpu-dev: `; tests/unit/test_stand_in_log_shipping.py keeps each a
# line the script prints), then sshd (`sshd -D -e`: its log on stderr), once it serves SSH.
STARTUP_STEPS = (
    "starting the dev server (node {rank})",
    "disk first use: default dotfiles copied to the home directory",
    "installing the SSH keys",
    "starting sshd on port 22 (ready when it prints: Server listening)",
)
SSHD_OUTPUT = ("Server listening on 0.0.0.0 port 22.", "Server listening on :: port 22.")
# The line a container running its image's own entrypoint prints here (no runtime runs it).
ENTRYPOINT_OUTPUT = "entrypoint started (local cloud: no runtime runs the image) for"
_NEGATIVE = "must be greater than or equal to 0"
_NOT_POSITIVE = "must be greater than 0"


@dataclass(frozen=True)
class LogOptions:
    """PodLogOptions from the query string."""

    container: str = ""
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since_seconds: int | None = None

    @classmethod
    def from_query(cls, pod_name: str, query: dict[str, str]) -> LogOptions:
        options = cls(
            container=query.get("container", ""),
            previous=_flag(query, "previous"),
            timestamps=_flag(query, "timestamps"),
            tail_lines=_number(query, "tailLines"),
            limit_bytes=_number(query, "limitBytes"),
            since_seconds=_number(query, "sinceSeconds"),
        )
        errors = []
        if options.tail_lines is not None and options.tail_lines < 0:
            errors.append(f"tailLines: Invalid value: {options.tail_lines}: {_NEGATIVE}")
        if options.limit_bytes is not None and options.limit_bytes < 1:
            errors.append(f"limitBytes: Invalid value: {options.limit_bytes}: {_NOT_POSITIVE}")
        if options.since_seconds is not None and options.since_seconds < 1:
            errors.append(f"sinceSeconds: Invalid value: {options.since_seconds}: {_NOT_POSITIVE}")
        if errors:
            summary = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
            message = f'PodLogOptions "{pod_name}" is invalid: {summary}'
            raise ApiError(422, "Invalid", message, pod_name, "PodLogOptions")
        return options


# kube-apiserver reads a boolean query value as false for "0" or any case of "false", and
# true for anything else (runtime.Convert_Slice_string_To_bool): `f` and `yes` are true. The
# stand-in is stricter: it takes the spellings both it and Go's strconv.ParseBool read alike
# and refuses the rest (400), so a query the stand-in takes means the same on EKS.
_FLAGS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True}
_FLAGS |= {"0": False, "FALSE": False, "false": False, "False": False}
_INT64 = range(-(2**63), 2**63)


def _flag(query: dict[str, str], name: str) -> bool:
    value = query.get(name, "false")
    if value not in _FLAGS:
        raise ApiError(400, "BadRequest", f'strconv.ParseBool: parsing "{value}": invalid syntax')
    return _FLAGS[value]


def _number(query: dict[str, str], name: str) -> int | None:
    """An int64 as Go's strconv.ParseInt(value, 10, 64) reads it: an optional sign, then
    ASCII digits only (no spaces, no `1_000`, which Python's int() would take)."""
    value = query.get(name)
    if value is None:
        return None
    digits = value[1:] if value[:1] in ("+", "-") else value
    if not (digits.isascii() and digits.isdigit()):
        raise ApiError(400, "BadRequest", f'strconv.ParseInt: parsing "{value}": invalid syntax')
    number = int(value)
    if number not in _INT64:
        raise ApiError(
            400, "BadRequest", f'strconv.ParseInt: parsing "{value}": value out of range'
        )
    return number


def startup_output(container: Obj, at: str) -> tuple[str, ...]:
    """The lines a container run begun at `at` (RFC 3339) prints as it starts, if the
    stand-in knows them."""
    argv = [*(container.get("command") or []), *(container.get("args") or [])]
    if argv[-1:] != [STARTUP_SCRIPT]:
        return ()
    env = {e.get("name"): e.get("value") for e in container.get("env") or []}
    rank = env.get("NODE_RANK") or "0"
    steps = tuple(f"{at} gpu-dev: {step.format(rank=rank)}" for step in STARTUP_STEPS)
    return steps + SSHD_OUTPUT


def entrypoint_output(container: Obj) -> str:
    """What a container running its image's own ENTRYPOINT and CMD prints: the stand-in runs
    no image, so one line that says whose entrypoint it is."""
    if container.get("command") or container.get("args"):
        return ""
    return f"{ENTRYPOINT_OUTPUT} {container.get('image', '')}"


def dockerd_output(container: Obj) -> str:
    """What a Docker daemon (`reserve --docker`'s sidecar: args `dockerd --host=unix://...`)
    prints once it serves, as dockerd words it: one line per unix socket it listens on."""
    args = container.get("args") or []
    if container.get("command") or args[:1] != ["dockerd"]:
        return ""
    sockets = [a.removeprefix("--host=unix://") for a in args if a.startswith("--host=unix://")]
    return "\n".join(f'level=info msg="API listen on {socket}"' for socket in sockets)


class ContainerLogs:
    """What the nodes keep of their containers' output, by (pod uid, container, run)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[tuple[str, str, int], list[Line]] = {}

    def write(self, uid: str, container: str, run: int, at: str, text: str) -> None:
        """A run's output (`text`, lines), written at `at` (RFC 3339)."""
        lines = [(at, line) for line in text.splitlines()]
        with self._lock:
            self._runs.setdefault((uid, container, run), []).extend(lines)

    def forget_pods_but(self, uids: set[str]) -> None:
        with self._lock:
            for key in [k for k in self._runs if k[0] not in uids]:
                del self._runs[key]

    def read(self, pod: Obj, options: LogOptions, moment: datetime | None = None) -> bytes:
        """The log `kubectl logs` prints for `pod` (as stored), or ApiError."""
        meta, spec = pod["metadata"], pod["spec"]
        name = _container_name(pod, options.container)
        if not spec.get("nodeName"):
            return b""  # not scheduled: no kubelet to ask, the API server answers nothing
        statuses = [
            *(pod["status"].get("initContainerStatuses") or []),
            *(pod["status"].get("containerStatuses") or []),
        ]
        status = next((s for s in statuses if s["name"] == name), None)
        run = _run(name, meta["name"], status, options.previous)
        with self._lock:
            lines = list(self._runs.get((meta["uid"], name, run), []))
        return _format(lines, options, moment or datetime.now(UTC))


def _container_name(pod: Obj, asked: str) -> str:
    spec, name = pod["spec"], pod["metadata"]["name"]
    containers: list[str] = [c["name"] for c in spec.get("containers") or []]
    init = [c["name"] for c in spec.get("initContainers") or []]
    if not asked:
        if len(containers) == 1:
            return containers[0]
        message = f"a container name must be specified for pod {name}"
        if containers:
            message += f", choose one of: [{' '.join(containers)}]"
            if init:
                message += f" or one of the init containers: [{' '.join(init)}]"
        raise ApiError(400, "BadRequest", message)
    if asked not in containers + init:
        raise ApiError(400, "BadRequest", f"container {asked} is not valid for pod {name}")
    return asked


def _run(name: str, pod: str, status: Obj | None, previous: bool) -> int:
    """Which run of the container the kubelet reads (its validateContainerLogStatus)."""
    where = f'container "{name}" in pod "{pod}"'
    if status is None:  # bound, not started: the kubelet's status says ContainerCreating
        if previous:
            raise ApiError(400, "BadRequest", f"previous terminated {where} not found")
        raise ApiError(400, "BadRequest", f"{where} is waiting to start: ContainerCreating")
    state, last = status.get("state") or {}, (status.get("lastState") or {}).get("terminated")
    count = int(status.get("restartCount", 0))
    last_run = count - 1 if ("running" in state or "terminated" in state) else count
    if previous:
        if not last or not last.get("containerID"):
            raise ApiError(400, "BadRequest", f"previous terminated {where} not found")
        return last_run
    if "running" in state:
        return count
    if "terminated" in state:
        if state["terminated"].get("containerID"):
            return count
        if last and last.get("containerID"):
            return last_run
        raise ApiError(400, "BadRequest", f"{where} is terminated")
    if last:
        if not last.get("containerID"):
            raise ApiError(400, "BadRequest", f"{where} is terminated")
        return last_run
    reason = (state.get("waiting") or {}).get("reason")
    if reason is None:
        raise ApiError(400, "BadRequest", f"{where} is waiting to start - no logs yet")
    said = {
        "ErrImagePull": "image can't be pulled",
        "ImagePullBackOff": "trying and failing to pull image",
    }.get(reason, reason)
    raise ApiError(400, "BadRequest", f"{where} is waiting to start: {said}")


def _format(lines: list[Line], options: LogOptions, moment: datetime) -> bytes:
    if options.since_seconds is not None:
        since = format_time(moment - timedelta(seconds=options.since_seconds))
        lines = [line for line in lines if line[0] >= since]
    if options.tail_lines is not None:
        lines = lines[-options.tail_lines :] if options.tail_lines else []
    text = "".join(
        f"{_nano(at)} {line}\n" if options.timestamps else f"{line}\n" for at, line in lines
    ).encode()
    return text[: options.limit_bytes] if options.limit_bytes is not None else text


def _nano(at: str) -> str:
    """RFC 3339 with nanoseconds, as the kubelet stamps each line."""
    return at.replace("Z", ".000000000Z") if "." not in at else at
