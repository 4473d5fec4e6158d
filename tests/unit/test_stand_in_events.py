"""The stand-in's events (localcloud/kubernetes/events.py, kubelet_events.py): recorded as
kube-scheduler and the kubelet record them through client-go's core/v1 recorder, for a pod's
scheduling, start, crash loop and stop; served with the field selectors `kubectl describe`
sends (involvedObject kind, name, namespace and uid) and refused with 400 for a field
kube-apiserver does not select on; expired after kube-apiserver's event TTL."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from localcloud.kubernetes import events, kubelet_events
from localcloud.kubernetes.container_restarts import Crash
from localcloud.kubernetes.init_containers import CRASH_LOOP
from localcloud.kubernetes.selectors import SelectorError
from localcloud.kubernetes.store import ObjectStore
from tests.support.kubernetes import auth_headers, stand_in_server
from tests.support.stand_in_cluster import NS, cluster, events_of, pod, reasons, run_until


def _running(store: ObjectStore, name: str) -> bool:
    return store.get("pods", NS, name)["status"].get("phase") == "Running"


def test_a_scheduled_pod_gets_the_schedulers_then_the_kubelets_events_in_order():
    simulated = cluster("node-a")
    store = simulated.store
    created = store.create("pods", NS, pod("first"))
    run_until(simulated, lambda: _running(store, "first"))
    assert reasons(store, "first") == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
    scheduled, pulling, pulled, made, started = events_of(store, "first")
    assert scheduled["message"] == f"Successfully assigned {NS}/first to node-a"
    assert scheduled["source"] == {"component": "default-scheduler"}
    assert scheduled["reportingComponent"] == "default-scheduler"
    assert pulling["message"] == 'Pulling image "dev:1"'
    assert pulled["message"] == 'Successfully pulled image "dev:1" in 0s (0s including waiting)'
    assert made["message"] == "Created container: dev"
    assert started["message"] == "Started container dev"
    assert started["source"] == {"component": "kubelet", "host": "node-a"}
    assert (started["reportingComponent"], started["reportingInstance"]) == ("kubelet", "node-a")
    involved = started["involvedObject"]
    assert {k: v for k, v in involved.items() if k != "resourceVersion"} == {
        "kind": "Pod",
        "apiVersion": "v1",
        "name": "first",
        "namespace": NS,
        "uid": created["metadata"]["uid"],
        "fieldPath": "spec.containers{dev}",
    }
    assert int(involved["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert started["type"] == "Normal" and started["count"] == 1
    assert started["firstTimestamp"] == started["lastTimestamp"]
    assert started["metadata"]["namespace"] == NS


def test_the_second_pod_of_an_image_on_a_node_finds_it_already_present():
    simulated = cluster("node-a")
    store = simulated.store
    store.create("pods", NS, pod("first"))
    run_until(simulated, lambda: _running(store, "first"))
    store.create("pods", NS, pod("second"))
    run_until(simulated, lambda: _running(store, "second"))
    pulled = [e for e in events_of(store, "second") if e["reason"] == "Pulled"]
    assert [e["message"] for e in pulled] == ['Container image "dev:1" already present on machine']
    assert "Pulling" not in reasons(store, "second")


def test_an_image_tagged_latest_is_pulled_every_time():
    simulated = cluster("node-a")
    store = simulated.store
    for name in ("first", "second"):
        store.create("pods", NS, pod(name, image="dev:latest"))
        run_until(simulated, lambda name=name: _running(store, name))
        assert "Pulling" in reasons(store, name)


def test_a_pod_that_fits_nowhere_gets_a_failed_scheduling_warning():
    simulated = cluster("node-a")
    store = simulated.store
    store.create("pods", NS, pod("too-big", gpus=16))
    warning = run_until(simulated, lambda: events_of(store, "too-big"))[0]
    assert (warning["type"], warning["reason"]) == ("Warning", "FailedScheduling")
    assert warning["message"].startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu")
    assert warning["source"] == {"component": "default-scheduler"}


def test_init_containers_get_their_own_events_by_field_path():
    simulated = cluster("node-a")
    store = simulated.store
    check = {"name": "check", "image": "dev:1", "command": ["/bin/sh", "-c", "exit 0"]}
    store.create("pods", NS, pod("initialized", initContainers=[check]))
    run_until(simulated, lambda: _running(store, "initialized"))
    paths = [
        (e["reason"], e["involvedObject"]["fieldPath"])
        for e in events_of(store, "initialized")
        if e["reason"] != "Scheduled"
    ]
    assert paths == [
        ("Pulling", "spec.initContainers{check}"),
        ("Pulled", "spec.initContainers{check}"),
        ("Created", "spec.initContainers{check}"),
        ("Started", "spec.initContainers{check}"),
        ("Pulled", "spec.containers{dev}"),  # the image is on the node by then
        ("Created", "spec.containers{dev}"),
        ("Started", "spec.containers{dev}"),
    ]


def test_a_container_killed_at_its_memory_limit_is_oom_killed_then_backs_off():
    simulated = cluster("node-a")
    store = simulated.store
    simulated.kubelet.crashing_images = {"hungry:1": Crash(137, reason="OOMKilled")}
    created = store.create("pods", NS, pod("hungry", image="hungry:1"))
    backoff = run_until(
        simulated, lambda: [e for e in events_of(store, "hungry") if e["reason"] == "BackOff"]
    )[0]
    meta = created["metadata"]
    assert backoff["type"] == "Warning"
    assert backoff["message"] == (
        f"Back-off restarting failed container dev in pod hungry_{NS}({meta['uid']})"
    )
    status = store.get("pods", NS, "hungry")["status"]["containerStatuses"][0]
    assert status["lastState"]["terminated"]["reason"] == "OOMKilled"
    # every run began with Created and Started (restarted at once after the first exit)
    assert reasons(store, "hungry").count("Started") == 1  # one event, counted again
    started = next(e for e in events_of(store, "hungry") if e["reason"] == "Started")
    # twice at least: a loaded machine may let the 10 s back-off run out before this line
    assert started["count"] >= 2


def test_a_container_that_cannot_start_gets_a_failed_warning_with_containerds_error():
    simulated = cluster("node-a")
    store = simulated.store
    simulated.kubelet.shell_less_images = frozenset({"distroless:1"})
    store.create("pods", NS, pod("no-shell", image="distroless:1"))
    failed = run_until(
        simulated, lambda: [e for e in events_of(store, "no-shell") if e["reason"] == "Failed"]
    )[0]
    assert failed["type"] == "Warning"
    assert failed["message"].startswith("Error: failed to create containerd task")


def test_a_deleted_pods_running_containers_are_killed_with_an_event():
    simulated = cluster("node-a")
    store = simulated.store
    store.create("pods", NS, pod("stopping"))
    run_until(simulated, lambda: _running(store, "stopping"))
    store.delete("pods", NS, "stopping")
    killing = run_until(
        simulated, lambda: [e for e in events_of(store, "stopping") if e["reason"] == "Killing"]
    )[0]
    assert killing["message"] == "Stopping container dev"
    assert killing["involvedObject"]["fieldPath"] == "spec.containers{dev}"


def _recorded(store: ObjectStore) -> tuple[dict, dict]:
    one = store.create("pods", NS, pod("one"))
    two = store.create("pods", NS, pod("two"))
    for involved in (one, two):
        events.record(store, involved, "Warning", "FailedMount", "no volume", "kubelet")
    return one, two


def test_describes_field_selector_finds_only_the_objects_own_events():
    store = ObjectStore()
    one, _two = _recorded(store)
    meta = one["metadata"]
    selector = (
        f"involvedObject.kind=Pod,involvedObject.name=one,"
        f"involvedObject.namespace={NS},involvedObject.uid={meta['uid']}"
    )
    found = store.list("events", NS, field_selector=selector)["items"]
    assert [e["involvedObject"]["name"] for e in found] == ["one"]
    assert store.list("events", NS, field_selector=f"{selector[:-4]}xxxx")["items"] == []
    assert len(store.list("events", NS, field_selector="source=kubelet")["items"]) == 2
    assert len(store.list("events", NS, field_selector="type=Normal")["items"]) == 0
    assert len(store.list("events", NS, field_selector="involvedObject.kind!=Pod")["items"]) == 0


def test_an_event_that_happens_again_is_counted_on_the_same_object():
    store = ObjectStore()
    one, _two = _recorded(store)
    events.record(store, one, "Warning", "FailedMount", "no volume", "kubelet")
    (event,) = store.list("events", NS, field_selector="involvedObject.name=one")["items"]
    assert event["count"] == 2
    assert event["lastTimestamp"] >= event["firstTimestamp"]


def test_a_field_kube_apiserver_does_not_select_events_on_is_refused():
    store = ObjectStore()
    with pytest.raises(SelectorError, match=r'field label not supported: "involvedObject\.color"'):
        store.list("events", NS, field_selector="involvedObject.color=red")
    server = stand_in_server(store, "test")
    status, body = server.handle(
        "GET",
        f"/api/v1/namespaces/{NS}/events?fieldSelector=message%3Dx",
        auth_headers("test"),
        b"",
    )
    assert status == 400
    assert (body["kind"], body["reason"]) == ("Status", "BadRequest")
    assert body["message"] == 'field label not supported: "message"'
    assert json.dumps(body)  # a Status the client can decode


def test_events_expire_an_hour_after_their_last_write():
    store = ObjectStore()
    one, _two = _recorded(store)
    later = datetime.now(UTC) + timedelta(minutes=59)
    assert events.expire(store, moment=later) == 0
    assert events.expire(store, moment=later + timedelta(minutes=2)) == 2
    assert store.list("events", None)["items"] == []
    events.record(store, one, "Warning", "FailedMount", "no volume", "kubelet")
    assert events.expire(store, ttl_seconds=0.0, moment=later) == 1


def test_an_init_container_that_cannot_start_fails_then_backs_off_with_its_own_events():
    simulated = cluster("node-a")
    store = simulated.store
    simulated.kubelet.shell_less_images = frozenset({"distroless:1"})
    check = {"name": "check", "image": "distroless:1", "command": ["/bin/sh", "-c", "exit 0"]}
    store.create("pods", NS, pod("init-fails", initContainers=[check]))

    def warnings() -> list[tuple[str, str]]:
        return [
            (e["reason"], e["involvedObject"]["fieldPath"])
            for e in events_of(store, "init-fails")
            if e["type"] == "Warning"
        ]

    run_until(simulated, lambda: ("BackOff", "spec.initContainers{check}") in warnings())
    assert ("Failed", "spec.initContainers{check}") in warnings()
    backoff = next(e for e in events_of(store, "init-fails") if e["reason"] == "BackOff")
    assert backoff["message"].startswith("Back-off restarting failed container check in pod ")


def _with(statuses: list[dict]) -> dict:
    manifest = pod("planned")
    manifest["metadata"] |= {"namespace": NS, "uid": "u-1"}
    return manifest | {"status": {"containerStatuses": statuses}}


def test_the_kubelets_event_plan_names_each_transition_once():
    running = {"name": "dev", "restartCount": 0, "state": {"running": {"startedAt": "t"}}}
    waiting = {"name": "dev", "restartCount": 0, "state": {"waiting": {"reason": "X"}}}
    looping = {"name": "dev", "restartCount": 1, "state": {"waiting": {"reason": CRASH_LOOP}}}
    restarted = running | {"restartCount": 2}
    images: set[str] = set()
    plan = kubelet_events.plan

    def said(before: list[dict], after: list[dict]) -> list[str]:
        return [e.reason for e in plan(_with(before), _with(after), images)]

    assert said([waiting], [running]) == ["Pulling", "Pulled", "Created", "Started"]
    assert images == {"dev:1"}
    assert said([running], [running]) == []  # the same run: nothing new
    assert said([running], [looping]) == ["BackOff"]
    assert said([looping], [looping]) == []  # still backing off: once
    assert said([looping], [restarted]) == ["Pulled", "Created", "Started"]  # image present


def test_a_pod_the_kubelet_rejects_gets_a_warning_with_its_reason():
    simulated = cluster("node-a")
    store = simulated.store
    store.create("pods", NS, pod("fills", gpus=4, nodeName="node-a"))
    run_until(simulated, lambda: _running(store, "fills"))
    store.create("pods", NS, pod("rejected", gpus=4, nodeName="node-a"))
    warning = run_until(
        simulated, lambda: [e for e in events_of(store, "rejected") if e["type"] == "Warning"]
    )[0]
    status = store.get("pods", NS, "rejected")["status"]
    assert (warning["reason"], warning["message"]) == (status["reason"], status["message"])
    assert warning["reason"] == "OutOfnvidia.com/gpu"
    assert "fieldPath" not in warning["involvedObject"]
