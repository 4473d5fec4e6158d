"""pods/log on the stand-in (localcloud/kubernetes/container_logs.py): `kubectl logs` reads
the startup script's output for our dev container, an init container's real output, a
crashing image's log and its previous run's; the options (container, tailLines, previous,
timestamps, limitBytes, sinceSeconds) apply as the kubelet applies them; every refusal is
kube-apiserver's or the kubelet's (404 missing pod, 400 unknown container, no previous run,
waiting to start, 422 invalid options), and the answer is text/plain."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from localcloud.http import RawRequest
from localcloud.kubernetes.container_logs import STARTUP_SCRIPT, ContainerLogs, LogOptions
from localcloud.kubernetes.container_restarts import Crash
from localcloud.kubernetes.errors import ApiError
from localcloud.kubernetes.server import KubernetesApiServer
from localcloud.kubernetes.store import ObjectStore
from tests.support.kubernetes import auth_headers, stand_in_server
from tests.support.stand_in_cluster import NS, cluster, pod, run_until

STEPS = (
    "starting the dev server (node 0)",
    "disk first use: default dotfiles copied to the home directory",
    "installing the SSH keys",
    "starting sshd on port 22 (ready when it prints: Server listening)",
)


def _startup(store: ObjectStore, name: str = "dev") -> str:
    """The startup script's step lines, stamped when the run began, then sshd's."""
    status = store.get("pods", NS, name)["status"]["containerStatuses"][0]
    started = status["state"]["running"]["startedAt"]
    steps = "".join(f"{started} gpu-dev: {step}\n" for step in STEPS)
    return steps + "Server listening on 0.0.0.0 port 22.\nServer listening on :: port 22.\n"


CRASH_LOG = "installing openssh-server\nno sshd in this image\n"


def _dev_pod(name: str, image: str = "dev:1", **spec: Any) -> dict[str, Any]:
    manifest = pod(name, image, **spec)
    manifest["spec"]["containers"][0]["command"] = ["/bin/bash", "-c", STARTUP_SCRIPT]
    return manifest


def _read(store: ObjectStore, logs: ContainerLogs, name: str, **query: str) -> str:
    pod = store.get("pods", NS, name)
    return logs.read(pod, LogOptions.from_query(name, query)).decode()


def _refusal(store: ObjectStore, logs: ContainerLogs, name: str, **query: str) -> ApiError:
    with pytest.raises(ApiError) as refused:
        _read(store, logs, name, **query)
    return refused.value


def _phase(store: ObjectStore, name: str) -> str:
    return str(store.get("pods", NS, name)["status"].get("phase"))


def test_the_dev_containers_log_is_what_the_startup_script_and_sshd_print():
    logs = ContainerLogs()
    simulated = cluster("node-a", logs=logs)
    store = simulated.store
    store.create("pods", NS, _dev_pod("dev"))
    run_until(simulated, lambda: _phase(store, "dev") == "Running")
    startup = _startup(store)
    assert _read(store, logs, "dev") == startup
    assert _read(store, logs, "dev", container="dev") == _startup(store)
    assert _read(store, logs, "dev", tailLines="1") == "Server listening on :: port 22.\n"
    assert _read(store, logs, "dev", tailLines="0") == ""
    assert _read(store, logs, "dev", limitBytes="10") == startup[:10]
    stamped = _read(store, logs, "dev", timestamps="true").splitlines()
    assert [line.split(" ", 1)[1] for line in stamped] == startup.splitlines()
    started = store.get("pods", NS, "dev")["status"]["containerStatuses"][0]["state"]
    assert all(
        line.startswith(started["running"]["startedAt"].replace("Z", ".000000000Z "))
        for line in stamped
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", stamped[0].split(" ")[0])


def test_since_seconds_keeps_the_lines_written_since():
    logs = ContainerLogs()
    simulated = cluster("node-a", logs=logs)
    store = simulated.store
    store.create("pods", NS, _dev_pod("dev"))
    run_until(simulated, lambda: _phase(store, "dev") == "Running")
    pod = store.get("pods", NS, "dev")
    later = datetime.now(UTC) + timedelta(hours=1)
    assert logs.read(pod, LogOptions(since_seconds=60), later) == b""
    assert logs.read(pod, LogOptions(since_seconds=7200), later).decode() == _startup(store)


def test_an_init_containers_log_is_what_its_script_printed():
    logs = ContainerLogs()
    simulated = cluster("node-a", logs=logs)
    script = "echo checking the image; echo jupyter-lab found"
    simulated.kubelet.trusted_scripts = frozenset({script})
    store = simulated.store
    check = {"name": "check", "image": "dev:1", "command": ["/bin/sh", "-c", script]}
    store.create("pods", NS, _dev_pod("dev", initContainers=[check]))
    run_until(simulated, lambda: _phase(store, "dev") == "Running")
    assert _read(store, logs, "dev", container="check") == (
        "checking the image\njupyter-lab found\n"
    )
    assert _read(store, logs, "dev", container="dev") == _startup(store)


def test_a_crashing_containers_log_and_its_previous_runs():
    logs = ContainerLogs()
    simulated = cluster("node-a", logs=logs)
    simulated.kubelet.crashing_images = {"no-sshd:1": Crash(1, log=CRASH_LOG)}
    store = simulated.store
    store.create("pods", NS, _dev_pod("crashing", image="no-sshd:1"))

    def restarted() -> bool:
        status = store.get("pods", NS, "crashing")["status"].get("containerStatuses") or [{}]
        return bool(status[0].get("lastState"))

    run_until(simulated, restarted)
    assert _read(store, logs, "crashing") == CRASH_LOG
    assert _read(store, logs, "crashing", previous="true") == CRASH_LOG


def test_a_container_name_not_in_the_pod_is_refused_as_kube_apiserver_refuses_it():
    logs = ContainerLogs()
    simulated = cluster("node-a", logs=logs)
    store = simulated.store
    store.create("pods", NS, _dev_pod("dev"))
    refused = _refusal(store, logs, "dev", container="sidecar")
    assert (refused.code, refused.reason) == (400, "BadRequest")
    assert refused.message == "container sidecar is not valid for pod dev"


def test_no_previous_run_is_refused_as_the_kubelet_refuses_it():
    logs = ContainerLogs()
    simulated = cluster("node-a", logs=logs)
    store = simulated.store
    store.create("pods", NS, _dev_pod("dev"))
    run_until(simulated, lambda: _phase(store, "dev") == "Running")
    refused = _refusal(store, logs, "dev", previous="true")
    assert refused.code == 400
    assert refused.message == 'previous terminated container "dev" in pod "dev" not found'


def test_a_pending_pod_is_waiting_to_start():
    logs = ContainerLogs()
    store = ObjectStore()
    store.create("pods", NS, _dev_pod("bound", nodeName="node-a"))
    refused = _refusal(store, logs, "bound")
    assert (refused.code, refused.message) == (
        400,
        'container "dev" in pod "bound" is waiting to start: ContainerCreating',
    )


def test_a_pod_whose_image_cannot_be_pulled_says_so():
    logs = ContainerLogs()
    simulated = cluster("node-a", logs=logs)
    simulated.kubelet.image_pulls_fail = True
    store = simulated.store
    store.create("pods", NS, _dev_pod("dev"))
    # ErrImagePull first, then the back-off, as a kubelet reports a refused pull.
    run_until(simulated, lambda: _waiting_reason(store, "dev") == "ErrImagePull")
    refused = _refusal(store, logs, "dev")
    assert (
        refused.message
        == 'container "dev" in pod "dev" is waiting to start: image can\'t be pulled'
    )
    run_until(simulated, lambda: _waiting_reason(store, "dev") == "ImagePullBackOff")
    refused = _refusal(store, logs, "dev")
    assert refused.message == (
        'container "dev" in pod "dev" is waiting to start: trying and failing to pull image'
    )


def _waiting_reason(store: ObjectStore, name: str) -> str | None:
    statuses = store.get("pods", NS, name)["status"].get("containerStatuses") or [{}]
    return ((statuses[0].get("state") or {}).get("waiting") or {}).get("reason")


def test_an_unscheduled_pod_has_an_empty_log():
    store = ObjectStore()
    store.create("pods", NS, _dev_pod("nowhere"))
    assert _read(store, ContainerLogs(), "nowhere") == ""


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        (
            {"tailLines": "-1"},
            422,
            'PodLogOptions "dev" is invalid: tailLines: Invalid value: -1: '
            "must be greater than or equal to 0",
        ),
        (
            {"limitBytes": "0"},
            422,
            'PodLogOptions "dev" is invalid: limitBytes: Invalid value: 0: must be greater than 0',
        ),
        (
            {"sinceSeconds": "0"},
            422,
            'PodLogOptions "dev" is invalid: sinceSeconds: Invalid value: 0: '
            "must be greater than 0",
        ),
        ({"tailLines": "ten"}, 400, 'strconv.ParseInt: parsing "ten": invalid syntax'),
        ({"previous": "yes"}, 400, 'strconv.ParseBool: parsing "yes": invalid syntax'),
        ({"tailLines": "1_000"}, 400, 'strconv.ParseInt: parsing "1_000": invalid syntax'),
        ({"tailLines": " 5"}, 400, 'strconv.ParseInt: parsing " 5": invalid syntax'),
        ({"tailLines": "5 "}, 400, 'strconv.ParseInt: parsing "5 ": invalid syntax'),
        ({"tailLines": "+"}, 400, 'strconv.ParseInt: parsing "+": invalid syntax'),
        ({"tailLines": "٣"}, 400, 'strconv.ParseInt: parsing "٣": invalid syntax'),
        (
            {"limitBytes": str(2**63)},
            400,
            f'strconv.ParseInt: parsing "{2**63}": value out of range',
        ),
        # kube-apiserver reads `f` as true (only "0" and "false" are false): refused here
        ({"previous": "f"}, 400, 'strconv.ParseBool: parsing "f": invalid syntax'),
        ({"timestamps": ""}, 400, 'strconv.ParseBool: parsing "": invalid syntax'),
        ({"timestamps": "tRUE"}, 400, 'strconv.ParseBool: parsing "tRUE": invalid syntax'),
    ],
)
def test_bad_log_options_are_refused(query: dict[str, str], code: int, message: str):
    with pytest.raises(ApiError) as refused:
        LogOptions.from_query("dev", query)
    assert (refused.value.code, refused.value.message) == (code, message)


@pytest.mark.parametrize(
    ("value", "meaning"),
    [
        *[(value, True) for value in ("1", "t", "T", "TRUE", "true", "True")],
        *[(value, False) for value in ("0", "FALSE", "false", "False")],
    ],
)
def test_log_flags_take_the_spellings_go_and_kube_apiserver_read_alike(value: str, meaning: bool):
    options = LogOptions.from_query("dev", {"previous": value, "timestamps": value})
    assert (options.previous, options.timestamps) == (meaning, meaning)


def test_log_numbers_take_a_sign_as_go_does():
    assert LogOptions.from_query("dev", {"tailLines": "+3"}).tail_lines == 3
    with pytest.raises(ApiError) as refused:
        LogOptions.from_query("dev", {"tailLines": "-3"})
    assert refused.value.code == 422  # read, then refused as negative


def _get(server: KubernetesApiServer, path: str) -> tuple[int, dict[str, str], bytes]:
    headers = auth_headers("test")
    return server._handle(RawRequest("GET", path, headers, b"", "127.0.0.1"))


def test_the_api_server_answers_pods_log_as_text_and_a_missing_pod_with_404():
    logs = ContainerLogs()
    simulated = cluster("node-a", logs=logs)
    store = simulated.store
    store.create("pods", NS, _dev_pod("dev"))
    run_until(simulated, lambda: _phase(store, "dev") == "Running")
    server = stand_in_server(store, "test", container_logs=logs)
    status, headers, body = _get(server, f"/api/v1/namespaces/{NS}/pods/dev/log?tailLines=1")
    assert (status, headers["Content-Type"], body) == (
        200,
        "text/plain",
        b"Server listening on :: port 22.\n",
    )
    status, headers, body = _get(server, f"/api/v1/namespaces/{NS}/pods/gone/log")
    assert status == 404
    assert b'pods \\"gone\\" not found' in body or b'pods "gone" not found' in body
    status, _headers, body = _get(server, f"/api/v1/namespaces/{NS}/pods/dev/log?container=x")
    assert status == 400 and b"container x is not valid for pod dev" in body


def test_pods_log_is_read_only_and_only_for_pods():
    store = ObjectStore()
    store.create("pods", NS, _dev_pod("dev"))
    server = stand_in_server(store, "test")
    headers = auth_headers("test")
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        status, body = server.handle(method, f"/api/v1/namespaces/{NS}/pods/dev/log", headers, b"")
        assert (status, body["reason"]) == (405, "MethodNotAllowed")
    assert store.get("pods", NS, "dev")["metadata"]["name"] == "dev"  # nothing was deleted
    status, body = server.handle("GET", f"/api/v1/namespaces/{NS}/services/x/log", headers, b"")
    assert (status, body["reason"]) == (404, "NotFound")
