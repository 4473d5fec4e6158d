"""Readiness of a reservation's pods, and which failures are final."""

from __future__ import annotations

from typing import Any

from gpudev.cluster.pod_readiness import pods_state


def _pod(name: str, phase: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"phase": phase, **status}}


def _conditions(ready: str) -> list[dict[str, str]]:
    return [
        {"type": "PodScheduled", "status": "True"},
        {"type": "ContainersReady", "status": ready},
        {"type": "Ready", "status": ready},
    ]


RUNNING = _pod(
    "gpu-dev-1",
    "Running",
    conditions=_conditions("True"),
    containerStatuses=[{"name": "gpu-dev", "ready": True, "state": {}}],
)
# Running, but the readiness probe on the SSH port has not passed yet.
NOT_READY = _pod(
    "gpu-dev-1",
    "Running",
    conditions=_conditions("False"),
    containerStatuses=[{"name": "gpu-dev", "ready": False, "state": {"running": {}}}],
)


def test_every_expected_pod_running_and_ready_is_ready():
    assert pods_state([RUNNING], 1).ready
    assert not pods_state([RUNNING], 2).ready


def test_running_is_not_ready_until_the_ready_condition_says_so():
    state = pods_state([NOT_READY], 1)
    assert not state.ready and not state.failed
    assert state.problem == "waiting for sshd: pod gpu-dev-1 runs but SSH is not answering yet"
    without_conditions = _pod("gpu-dev-1", "Running", containerStatuses=[{"ready": True}])
    assert not pods_state([without_conditions], 1).ready


NO_SSHD = {
    "exitCode": 1,
    "reason": "Error",
    "message": "installing openssh-server sudo (the dev image has them: deploy/dev-image)\n"
    "no sshd in this image, and apt-get could not install it\n",
    "startedAt": "2026-11-24T08:00:01Z",
    "finishedAt": "2026-11-24T08:00:02Z",
    "containerID": "containerd://u-1-gpu-dev",
}
JUPYTER_CHECKED = {
    "name": "jupyter-check",
    "ready": True,
    "restartCount": 0,
    "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
}


def _dev_container(name: str = "gpu-dev", **status: Any) -> dict[str, Any]:
    return {"name": name, "image": "img", "ready": False, "started": False, **status}


def _crashing(*containers: dict[str, Any]) -> dict[str, Any]:
    """A pod of a starting reservation as the kubelet writes it while a container of it
    crashes: Running, not Ready, its init container completed."""
    return _pod(
        "gpu-dev-1",
        "Running",
        conditions=_conditions("False"),
        initContainerStatuses=[JUPYTER_CHECKED],
        containerStatuses=list(containers),
    )


def test_a_dev_container_crashing_again_after_its_restart_is_final_with_its_words():
    looping = _crashing(
        _dev_container(
            restartCount=3,
            state={
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": "back-off 40s restarting failed container=gpu-dev "
                    "pod=gpu-dev-1_gpu-dev(u-1)",
                }
            },
            lastState={"terminated": NO_SSHD},
        )
    )
    state = pods_state([looping], 1)
    assert not state.ready and state.failed
    assert state.problem == (
        "container gpu-dev keeps crashing (CrashLoopBackOff, restarted 3 times; last exit 1: "
        "installing openssh-server sudo (the dev image has them: deploy/dev-image)\n"
        "no sshd in this image, and apt-get could not install it)"
    )
    # between its second exit and the kubelet's back-off: as final
    exited_again = _crashing(
        _dev_container(
            restartCount=1, state={"terminated": NO_SSHD}, lastState={"terminated": NO_SSHD}
        )
    )
    state = pods_state([exited_again], 1)
    assert state.failed and state.problem is not None
    assert state.problem.startswith("container gpu-dev keeps crashing (CrashLoopBackOff, ")
    assert "restarted once; last exit 1: " in state.problem


def test_a_dev_container_that_crashed_once_or_runs_again_is_not_final():
    first_crash = _crashing(_dev_container(restartCount=0, state={"terminated": NO_SSHD}))
    state = pods_state([first_crash], 1)
    assert not state.ready and not state.failed
    assert state.problem is not None and state.problem.startswith(
        "container gpu-dev exited (exit 1: installing openssh-server"
    )
    assert state.problem.endswith("apt-get could not install it); restarting it")
    running_again = _crashing(
        _dev_container(restartCount=1, state={"running": {}}, lastState={"terminated": NO_SSHD})
    )
    state = pods_state([running_again], 1)
    assert not state.failed
    assert state.problem == "waiting for sshd: pod gpu-dev-1 runs but SSH is not answering yet"


def test_a_crash_looping_second_container_is_final_and_named():
    sidecar = _crashing(
        _dev_container(ready=False, started=True, restartCount=0, state={"running": {}}),
        _dev_container(
            "log-shipper",
            restartCount=2,
            state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s"}},
            lastState={"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
        ),
    )
    state = pods_state([sidecar], 1)
    assert state.failed
    assert state.problem == (
        "container log-shipper keeps crashing (CrashLoopBackOff, restarted 2 times; "
        "last exit 137: OOMKilled)"
    )


def test_a_long_termination_message_shows_its_tail():
    said = "x" * 500 + " the end"
    looping = _crashing(
        _dev_container(
            restartCount=1,
            state={"waiting": {"reason": "CrashLoopBackOff"}},
            lastState={"terminated": {"exitCode": 2, "reason": "Error", "message": said}},
        )
    )
    problem = pods_state([looping], 1).problem
    assert problem is not None and problem.endswith("last exit 2: …" + said[-200:] + ")")


def test_a_pod_whose_containers_all_exited_0_is_final():
    done = _pod(
        "gpu-dev-1",
        "Succeeded",
        containerStatuses=[
            _dev_container(state={"terminated": {"exitCode": 0, "reason": "Completed"}})
        ],
    )
    state = pods_state([done], 1)
    assert state.failed and state.problem == "pod gpu-dev-1 ended: its containers exited 0"


def test_a_pod_refused_by_the_kubelet_is_a_final_failure_with_its_reason():
    refused = _pod(
        "gpu-dev-2",
        "Failed",
        reason="OutOfnvidia.com/gpu",
        message="Pod was rejected: Node didn't have enough resource: nvidia.com/gpu",
    )
    state = pods_state([RUNNING, refused], 2)
    assert not state.ready and state.failed
    assert state.problem is not None and "OutOfnvidia.com/gpu" in state.problem
    assert "enough resource" in state.problem


def test_a_pull_back_off_is_a_problem_but_not_final():
    pulling = _pod(
        "gpu-dev-1",
        "Pending",
        containerStatuses=[
            {
                "name": "gpu-dev",
                "ready": False,
                "state": {"waiting": {"reason": "ImagePullBackOff"}},
            }
        ],
    )
    state = pods_state([pulling], 1)
    assert not state.ready and not state.failed
    assert state.problem is not None and "could not be pulled" in state.problem


def _initializing(init_status: dict[str, Any]) -> dict[str, Any]:
    return _pod(
        "gpu-dev-1",
        "Pending",
        initContainerStatuses=[{"name": "jupyter-check", "ready": False, **init_status}],
        containerStatuses=[
            {"name": "gpu-dev", "ready": False, "state": {"waiting": {"reason": "PodInitializing"}}}
        ],
    )


START_ERROR = {
    "exitCode": 128,
    "reason": "StartError",
    "message": 'exec: "/bin/bash": stat /bin/bash: no such file or directory',
}


def test_an_init_container_failing_again_after_its_restart_is_final_with_its_last_exit():
    backing_off = _initializing(
        {
            "restartCount": 2,
            "state": {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": "back-off 20s restarting failed container=jupyter-check",
                }
            },
            "lastState": {"terminated": START_ERROR},
        }
    )
    state = pods_state([backing_off], 1)
    assert not state.ready and state.failed
    assert state.problem == (
        "init container jupyter-check keeps failing (CrashLoopBackOff, restarted 2 times; "
        'last exit 128: exec: "/bin/bash": stat /bin/bash: no such file or directory)'
    )
    # seen between the failure and the kubelet's back-off: as final
    just_failed_again = _initializing({"restartCount": 1, "state": {"terminated": START_ERROR}})
    assert pods_state([just_failed_again], 1).failed


def test_an_init_container_that_failed_once_or_runs_again_is_not_final():
    first_failure = _initializing({"restartCount": 0, "state": {"terminated": START_ERROR}})
    state = pods_state([first_failure], 1)
    assert not state.failed
    assert state.problem is not None and state.problem.startswith(
        "init container jupyter-check failed (exit 128: "
    )
    rerun = _initializing(
        {"restartCount": 1, "state": {"running": {}}, "lastState": {"terminated": START_ERROR}}
    )
    assert not pods_state([rerun], 1).failed


def test_a_pod_failed_without_a_reason_says_so_without_a_dangling_colon():
    never = _pod(
        "gpu-dev-1",
        "Failed",
        initContainerStatuses=[{"name": "jupyter-check", "state": {"terminated": START_ERROR}}],
    )
    state = pods_state([never], 1)
    assert state.failed
    assert state.problem is not None
    assert state.problem.startswith("pod gpu-dev-1 failed; init container jupyter-check failed")


# Scheduled, waiting in ContainerCreating: its status says nothing of why.
CREATING = _pod(
    "gpu-dev-1",
    "Pending",
    conditions=[{"type": "PodScheduled", "status": "True"}],
    containerStatuses=[
        {"name": "gpu-dev", "ready": False, "state": {"waiting": {"reason": "ContainerCreating"}}}
    ],
)


def _event(reason: str, message: str, at: str, kind: str = "Warning", pod: str = "gpu-dev-1"):
    return {
        "type": kind,
        "reason": reason,
        "message": message,
        "lastTimestamp": at,
        "involvedObject": {"kind": "Pod", "name": pod},
    }


def test_a_pending_pod_says_why_through_its_warning_events_the_attach_failure_first():
    attach = _event(
        "FailedAttachVolume",
        'AttachVolume.Attach failed for volume "pv-1" : InvalidVolume.ZoneMismatch',
        "2026-11-27T10:00:00Z",
    )
    mount = _event("FailedMount", "timed out waiting for the condition", "2026-11-27T10:02:00Z")
    normal = _event("Scheduled", "assigned", "2026-11-27T10:03:00Z", kind="Normal")
    other_pod = _event("FailedMount", "not this one", "2026-11-27T10:04:00Z", pod="gpu-dev-2")

    state = pods_state([CREATING], 1, [attach, mount, normal, other_pod])

    assert not state.ready and not state.failed  # an attach may still succeed: not final
    assert state.problem == (
        "its disk's volume could not be attached (FailedAttachVolume: AttachVolume.Attach "
        'failed for volume "pv-1" : InvalidVolume.ZoneMismatch)'
    )
    assert pods_state([CREATING], 1, [mount]).problem == (
        "a volume could not be mounted (FailedMount: timed out waiting for the condition)"
    )
    assert pods_state([CREATING], 1, [normal]).problem == "the pod is starting"
    assert pods_state([CREATING], 1).problem == "the pod is starting"


def test_a_status_that_says_why_wins_over_events():
    pulling = _pod(
        "gpu-dev-1",
        "Pending",
        containerStatuses=[
            {
                "name": "gpu-dev",
                "state": {"waiting": {"reason": "ImagePullBackOff", "message": "m"}},
            }
        ],
    )
    event = _event("BackOff", 'Back-off pulling image "x"', "2026-11-27T10:00:00Z")
    assert pods_state([pulling], 1, [event]).problem == (
        "the image could not be pulled (ImagePullBackOff: m)"
    )


def test_a_long_event_message_keeps_its_head_and_its_cause_at_the_end():
    message = "AttachVolume.Attach failed for volume " + "x" * 500 + " VolumeInUse: in use"
    event = _event("FailedAttachVolume", message, "2026-11-27T10:00:00Z")
    problem = pods_state([CREATING], 1, [event]).problem
    assert problem is not None and len(problem) < 450
    assert "(FailedAttachVolume: AttachVolume.Attach failed for volume xxx" in problem
    assert problem.endswith("x VolumeInUse: in use)") and "…" in problem


def _on_node(pod: dict[str, Any], *, claim: str | None = None) -> dict[str, Any]:
    volumes = [{"name": "dev-home", "persistentVolumeClaim": {"claimName": claim}}] if claim else []
    spec = {"nodeName": "gpu-1", "containers": [{"name": "gpu-dev", "image": "dev:1"}]}
    return {**pod, "spec": {**spec, "volumes": volumes}}


WAITING = [{"name": "gpu-dev", "state": {"waiting": {"reason": "ContainerCreating"}}}]


def test_a_starting_pod_says_the_step_it_is_in():
    unscheduled = _pod(
        "gpu-dev-1",
        "Pending",
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
            }
        ],
    )
    assert pods_state([unscheduled], 1).problem == (
        "waiting for a node: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    )
    pulling = _on_node(_pod("gpu-dev-1", "Pending", containerStatuses=WAITING))
    assert pods_state([pulling], 1).problem == "pulling image dev:1"
    attaching = _on_node(_pod("gpu-dev-1", "Pending"), claim="disk-work")
    assert pods_state([attaching], 1).problem == "attaching disk disk-work"
    # The user's name for the disk when the check knows it, not the claim's
    assert pods_state([attaching], 1, disk="work").problem == "attaching disk work"
    checking = _on_node(
        _pod(
            "gpu-dev-1",
            "Pending",
            initContainerStatuses=[{"name": "jupyter-check", "state": {"running": {}}}],
            containerStatuses=[
                {"name": "gpu-dev", "state": {"waiting": {"reason": "PodInitializing"}}}
            ],
        )
    )
    assert pods_state([checking], 1).problem == "running the Jupyter check"
    assert pods_state([NOT_READY], 1).problem.startswith("waiting for sshd: ")


def test_a_step_never_hides_a_problem():
    failing = _on_node(
        _pod(
            "gpu-dev-1",
            "Pending",
            containerStatuses=[
                {
                    "name": "gpu-dev",
                    "state": {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}},
                }
            ],
        )
    )
    assert pods_state([failing], 1).problem == (
        "the image could not be pulled (ImagePullBackOff: not found)"
    )


NOT_FOUND = (
    'rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/'
    'nope:1": failed to resolve reference "docker.io/library/nope:1": docker.io/library/'
    "nope:1: not found"
)


def _pulling(where: str, reason: str, message: str) -> dict[str, Any]:
    waiting = [{"name": "c", "state": {"waiting": {"reason": reason, "message": message}}}]
    return _pod("gpu-dev-1", "Pending", **{where: waiting})


def test_an_image_the_registry_does_not_have_fails_the_start_at_once():
    for where in ("initContainerStatuses", "containerStatuses"):
        state = pods_state([_pulling(where, "ErrImagePull", NOT_FOUND)], 1)
        assert state.failed, where
        assert state.problem == f"the image does not exist (ErrImagePull: {NOT_FOUND})"


def test_while_the_kubelet_backs_off_its_failed_event_says_not_found():
    backing_off = _pulling(
        "initContainerStatuses", "ImagePullBackOff", 'Back-off pulling image "nope:1"'
    )
    assert not pods_state([backing_off], 1).failed  # the status alone cannot say why
    failed_pull = {
        "type": "Warning",
        "reason": "Failed",
        "message": f'Failed to pull image "nope:1": {NOT_FOUND}',
        "involvedObject": {"name": "gpu-dev-1"},
    }
    state = pods_state([backing_off], 1, [failed_pull])
    assert state.failed and state.problem == f"the image does not exist ({failed_pull['message']})"
    someone_elses = {**failed_pull, "involvedObject": {"name": "gpu-dev-2"}}
    assert not pods_state([backing_off], 1, [someone_elses]).failed


def test_a_pull_refused_for_another_reason_waits_for_the_deadline():
    refused = "rpc error: code = Unknown desc = failed to copy: unexpected status code 429"
    state = pods_state([_pulling("containerStatuses", "ErrImagePull", refused)], 1)
    assert not state.failed
    assert state.problem == f"the image could not be pulled (ErrImagePull: {refused})"
    invalid = _pulling(
        "containerStatuses", "InvalidImageName", 'Failed to apply default image tag "A:"'
    )
    assert pods_state([invalid], 1).failed  # a name that is no image name never pulls
