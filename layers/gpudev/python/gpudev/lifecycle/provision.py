"""Creating a granted reservation's objects in the cluster and waiting for its pods."""

from __future__ import annotations

import base64
import secrets
import time
from typing import Any

from gpudev.cluster import network, objects, shared_files, team_share
from gpudev.cluster.failure_log import failure_log_tail
from gpudev.cluster.host_keys import PUBLIC_ENTRY, new_host_key
from gpudev.cluster.jupyter_verdict import JupyterVerdict, jupyter_verdict
from gpudev.cluster.names import Names
from gpudev.cluster.node_access import new_node_key
from gpudev.cluster.objects_client import ReservationObjects
from gpudev.cluster.pod_entrypoint import settle_seconds, still_settling
from gpudev.cluster.pod_readiness import PodsState, needs_events, pods_state
from gpudev.cluster.pod_timeline import pod_entries
from gpudev.lifecycle.disk import mount_home
from gpudev.lifecycle.payloads import CheckReady, CheckReadyOutput, Provision, ProvisionOutput
from gpudev.lifecycle.shared_files import mount_shared_files
from gpudev.lifecycle.tasks import Lifecycle, written
from gpudev.lifecycle.taxonomy import StateChanged
from gpudev.lifecycle.team_share import mount_team_share
from gpudev.models import NodeEndpoint, Reservation, ReservationStatus, TimelineEntry
from gpudev.repositories import GpuTypesRepository

# How often `check_ready` lists the pods while it watches them (one LIST of a label
# selector; with the row read for a cancel, two light requests a second per starting
# reservation: 0.2 s would be 250 LISTs a second for 50 reservations starting at once).
READY_WATCH_SECONDS = 0.5


def provision(lc: Lifecycle, task: Provision) -> ProvisionOutput:
    reservation = lc.reservation(task.reservation_id)
    if reservation.cancel_requested_at is not None:
        return ProvisionOutput(outcome="cancel")
    placements = lc.rows.placements(task.reservation_id)
    if len(placements) != reservation.total_nodes:
        raise RuntimeError(f"{len(placements)} of {reservation.total_nodes} nodes are allocated")
    gpu_type = GpuTypesRepository(lc.conn).get(reservation.gpu_type)
    assert gpu_type is not None
    token = reservation.jupyter_token or secrets.token_hex(32)
    reservation = reservation.model_copy(update={"jupyter_token": token})
    host_key = new_host_key()  # sshd's, made once per reservation (host_keys.py)
    keys = lc.keys_secret(reservation, host_key=host_key)  # GitHub down: Transient, retried
    if not keys["stringData"][objects.OWNER_KEYS_ENTRY] and not reservation.preserve_entrypoint:
        # Checked before any object exists: nobody could log in, so nothing is created.
        user = reservation.github_user
        return ProvisionOutput(
            outcome="failed",
            reason=f"no SSH keys to install: GitHub user {user!r} has no public keys "
            f"(https://github.com/{user}.keys); add a key on GitHub and reserve again"
            if user
            else "no SSH keys to install: the reservation names no GitHub user; set one with "
            "`gpu-dev config set github_user NAME` and reserve again",
        )
    cluster = lc.objects(reservation)
    cluster.create(network.network_policy(reservation))
    cluster.create(objects.control_config_map(reservation, "", None, ""))
    cluster.create(keys)
    kept = _kept_in_secret(cluster, reservation)
    if reservation.total_nodes > 1:  # dev's key between the pods, the hostfile, gpu-dev-run
        cluster.create(objects.nodes_secret(reservation, new_node_key()))
        cluster.create(
            objects.nodes_config_map(
                reservation,
                reservation.gpu_count // reservation.total_nodes,
                kept.get(PUBLIC_ENTRY, host_key.public),
            )
        )
    cluster.create(network.headless_service(reservation))
    for rank in range(reservation.total_nodes):  # every node reachable on its own port
        if not reservation.preserve_entrypoint:  # its image's own entrypoint: no sshd
            cluster.create(network.ssh_service(reservation, rank))
    home = mount_home(lc, reservation)
    shared = mount_shared_files(lc, reservation)
    team = mount_team_share(lc, reservation)
    for placement in placements:
        image = reservation.image_pull or lc.settings.pod_image  # the digest resolved at submit
        pod = objects.pod(
            reservation,
            gpu_type,
            placement,
            image,
            home,
            lc.settings.tools_image,
            lc.settings.docker_image,
        )
        if shared is not None:  # every pod, rank 0 and the others
            assert lc.shared_files is not None
            shared_files.mount_in_pod(pod, shared, lc.shared_files.ccache_max_size)
        if team is not None:  # every pod too, read-only when the deployment says so
            team_share.mount_in_pod(pod, team_share.name_of(reservation), team.read_only)
        cluster.create(pod)
    written(
        lc.rows.preparing(
            task.reservation_id,
            pod_name=Names.of(reservation).pod(0),
            namespace=lc.namespace_of(reservation),
            jupyter_token=kept.get("jupyter_token") or token,
            ssh_host_keys=[kept.get(PUBLIC_ENTRY, host_key.public).strip()],
            ready_timeout_seconds=lc.settings.ready_timeout_seconds,
            generation=reservation.change_generation,
            keyless_users=objects.keyless_users(keys, reservation.secondary_users),
        ),
        "preparing",
    )
    return ProvisionOutput(outcome="provisioning")


def _kept_in_secret(cluster: ReservationObjects, reservation: Reservation) -> dict[str, str]:
    """The keys Secret's entries as the cluster holds them: what the pods install. A retried
    provision finds the Secret an earlier try made (its create answered too late, or the
    task failed after it; creating an object of ours that exists is a success that changes
    nothing), so the row records that Secret's Jupyter token and host key, never the ones
    this try made."""
    current = cluster.read("Secret", Names.of(reservation).keys) or {}
    return {
        entry: base64.b64decode(value).decode()
        for entry, value in (current.get("data") or {}).items()
    }


def check_ready(lc: Lifecycle, task: CheckReady) -> CheckReadyOutput:
    """Whether the pods are ready, watching them for up to `ready_watch_seconds` (a LIST
    every `READY_WATCH_SECONDS`, the row read again for a cancel) before answering
    `waiting`: the moment the pod turns Ready is seen within a fraction of a second instead
    of after the state machine's next Wait of `ready_poll_seconds`."""
    reservation_id = task.reservation_id
    watch_until = time.monotonic() + lc.settings.ready_watch_seconds
    while True:
        reservation = lc.reservation(reservation_id)
        if reservation.cancel_requested_at is not None:
            return CheckReadyOutput(outcome="cancel")
        cluster = lc.objects(reservation)
        pods = cluster.pods(str(reservation_id))
        disk = reservation.disk_name
        state = pods_state(pods, reservation.total_nodes, disk=disk)
        if state.ready and reservation.preserve_entrypoint:  # no probe: Ready at once
            settle = settle_seconds(lc.settings.ready_timeout_seconds)
            if settling := still_settling(pods, lc.clock(), settle):
                state = PodsState(False, settling)
        warnings: list[dict[str, Any]] = []
        if not state.ready and not state.failed and needs_events(pods):
            # A Pending pod's status rarely says why (ContainerCreating): its Warning events
            # do (FailedAttachVolume, FailedMount), so that reason reaches the row.
            pending = [p["metadata"]["name"] for p in pods if needs_events([p])]
            warnings = cluster.warning_events(pending)
            state = pods_state(pods, reservation.total_nodes, warnings, disk)
        deadline = reservation.ready_deadline
        late = deadline is not None and lc.clock() > deadline.timestamp()
        watched = time.monotonic() + READY_WATCH_SECONDS > watch_until
        if state.ready or state.failed or late or watched:
            # Before it answers: what the pods show happened, in the timeline (each once).
            lc.rows.record_events(reservation_id, pod_entries(pods, warnings, disk))
        if state.ready:  # Ready: node 0's init container (the Jupyter check) has completed
            return _activate(lc, reservation, _jupyter(reservation, pods))
        if state.failed:
            return _failed(lc, reservation, pods, f"the pod did not start: {state.problem}")
        if late:
            return _failed(lc, reservation, pods, f"the pod was not ready in time: {state.problem}")
        if watched:
            if state.problem and state.problem != reservation.current_detailed_status:
                lc.rows.progress(reservation_id, state.problem)  # `show` says why it waits
            return CheckReadyOutput(outcome="waiting", detail=state.problem)
        lc.sleep(READY_WATCH_SECONDS)


def _failed(
    lc: Lifecycle, reservation: Reservation, pods: list[dict[str, Any]], reason: str
) -> CheckReadyOutput:
    """A start that failed: the last lines its pod printed go to the timeline (best effort:
    failure_log.py) before the state machine tears it down and ends it with `reason`."""
    tail = failure_log_tail(lc.objects(reservation), pods)
    if tail:  # one per reservation: a retried check records none again
        lc.rows.record_events(
            reservation.reservation_id, [TimelineEntry("pod_log", tail, "pod_log")]
        )
    return CheckReadyOutput(outcome="failed", reason=reason)


def _activate(lc: Lifecycle, reservation: Reservation, jupyter: JupyterVerdict) -> CheckReadyOutput:
    reservation_id = reservation.reservation_id
    names = Names.of(reservation)
    ports = lc.objects(reservation).node_ports(str(reservation_id))
    # Users connect to each node's own address: its external one when it has one.
    nodes = []
    for placement in lc.rows.placements(reservation_id):
        address, kind = placement.ssh_address
        port = ports.get(names.ssh_service_of(placement.rank))
        nodes.append(
            NodeEndpoint(
                rank=placement.rank, node_ip=address, node_port=port, node_address_kind=kind
            )
        )
    nodes.sort(key=lambda node: node.rank)
    first = nodes[0]
    activated = lc.rows.activate(
        reservation_id,
        seconds_per_hour=lc.settings.seconds_per_hour,
        node_ip=first.node_ip,
        node_port=first.node_port,
        node_address_kind=first.node_address_kind or "internal",
        jupyter_available=jupyter.available,
        jupyter_error=jupyter.reason,
        ssh_nodes=nodes,
    )
    # Nothing matched: a retry after the write (fine), or the row moved on (read again).
    status = activated.status if activated else lc.reservation(reservation_id).status
    if status != ReservationStatus.ACTIVE:
        raise StateChanged("the reservation left 'preparing' while its pod started")
    return CheckReadyOutput(outcome="ready")


def _jupyter(reservation: Reservation, pods: list[dict[str, Any]]) -> JupyterVerdict:
    """Node 0's Jupyter check; a pod running its image's own entrypoint runs none."""
    if reservation.preserve_entrypoint:
        return JupyterVerdict(False, "the image's own entrypoint runs: no Jupyter")
    return jupyter_verdict(pods)
