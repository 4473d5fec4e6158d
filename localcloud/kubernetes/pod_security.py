"""Pod Security admission for the stand-in: the `baseline` and `restricted` levels of the
Pod Security Standards (k8s.io/pod-security-admission, policy `latest`), enforced on pods
created in a namespace labelled `pod-security.kubernetes.io/enforce: baseline` or
`restricted`, refused as kube-apiserver refuses them: 403 Forbidden, `pods "x" is forbidden:
violates PodSecurity "<level>:latest": <reason> (<detail>), ...`, one entry per failed check
in the evaluator's order: the baseline checks in the policy package's order (by file name),
then, at `baseline`, the two the restricted level replaces (capabilities and seccomp, marked
`Overlap` there), or at `restricted`, the restricted checks. `privileged`, or no label, admits
every pod (the cluster's default level here is privileged).

The stand-in's own namespaces come from deploy/kubernetes/namespace.yaml, the file an
operator applies to EKS, so their labels cannot drift from the real ones. `warn` and `audit`
are not acted on (no warnings header, no audit log).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML comes with the kubernetes client; no stubs

from localcloud.kubernetes.errors import ApiError

Obj = dict[str, Any]
NAMESPACES_FILE = Path(__file__).parents[2] / "deploy" / "kubernetes" / "namespace.yaml"
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
ENFORCE_VERSION_LABEL = "pod-security.kubernetes.io/enforce-version"

# The capabilities `baseline` lets a container add (the runtime's defaults minus NET_RAW).
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
# Namespaced sysctls `baseline` allows (Kubernetes 1.32+).
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
VALID_SECCOMP = frozenset({"RuntimeDefault", "Localhost"})
# The volume types `restricted` allows, and the names it gives the others (its detail).
RESTRICTED_ALLOWED_VOLUMES = (
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
)
RESTRICTED_VOLUME_NAMES = (
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
)


def namespaces() -> list[Obj]:
    """The Namespace manifests of deploy/kubernetes/namespace.yaml."""
    with NAMESPACES_FILE.open() as file:
        return [doc for doc in yaml.safe_load_all(file) if doc and doc.get("kind") == "Namespace"]


# -- helpers, as the policy package words them -----------------------------------------------
def _quote(values: list[str]) -> str:
    return ", ".join(f'"{value}"' for value in values)


def _containers(names: list[str]) -> str:
    return f"{'container' if len(names) == 1 else 'containers'} {_quote(names)}"


def _all_containers(spec: Obj) -> Iterator[Obj]:
    for group in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(group) or []


def _context(container: Obj) -> Obj:
    return container.get("securityContext") or {}


def _bad_containers(spec: Obj, bad: Callable[[Obj], bool]) -> list[str]:
    return [c.get("name", "") for c in _all_containers(spec) if bad(c)]


def _pod_or_containers(pod_bad: bool, names: list[str], what: str) -> list[str]:
    return ([f"pod {what}"] if pod_bad else []) + (
        [f"{_containers(names)} {what}"] if names else []
    )


# -- the baseline checks ----------------------------------------------------------------------
def _app_armor(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    bad = [
        f'{key}="{value}"'
        for key, value in sorted((meta.get("annotations") or {}).items())
        if key.startswith(APPARMOR_ANNOTATION)
        and value
        and value != "runtime/default"
        and not value.startswith("localhost/")
    ]

    def unconfined(context: Obj) -> bool:
        return (context.get("appArmorProfile") or {}).get("type") == "Unconfined"

    bad += _pod_or_containers(
        unconfined(spec.get("securityContext") or {}),
        _bad_containers(spec, lambda c: unconfined(_context(c))),
        'must not set AppArmor profile type to "Unconfined"',
    )
    if not bad:
        return None
    reason = "forbidden AppArmor profile" if len(bad) == 1 else "forbidden AppArmor profiles"
    return reason, ", ".join(bad)


def _capabilities(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    added = {
        c.get("name", ""): [
            cap
            for cap in (_context(c).get("capabilities") or {}).get("add") or []
            if cap not in BASELINE_CAPABILITIES
        ]
        for c in _all_containers(spec)
    }
    names = [name for name, caps in added.items() if caps]
    if not names:
        return None
    forbidden = sorted({cap for caps in added.values() for cap in caps})
    return (
        "non-default capabilities",
        f"{_containers(names)} must not include {_quote(forbidden)} in "
        "securityContext.capabilities.add",
    )


def _host_namespaces(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    used = [f"{field}=true" for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field)]
    return ("host namespaces", ", ".join(used)) if used else None


def _host_path_volumes(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    names = [v.get("name", "") for v in spec.get("volumes") or [] if v.get("hostPath")]
    if not names:
        return None
    return "hostPath volumes", f"{'volume' if len(names) == 1 else 'volumes'} {_quote(names)}"


def _host_ports(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    names, ports = [], []
    for container in _all_containers(spec):
        used = [str(p["hostPort"]) for p in container.get("ports") or [] if p.get("hostPort")]
        if used:
            names.append(container.get("name", ""))
            ports += used
    if not names:
        return None
    verb = "uses" if len(names) == 1 else "use"
    noun = "hostPort" if len(ports) == 1 else "hostPorts"
    return "hostPort", f"{_containers(names)} {verb} {noun} {', '.join(ports)}"


def _privileged(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    names = _bad_containers(spec, lambda c: _context(c).get("privileged") is True)
    if not names:
        return None
    return "privileged", f"{_containers(names)} must not set securityContext.privileged=true"


def _proc_mount(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    def bad(container: Obj) -> bool:
        return _context(container).get("procMount") not in (None, "Default")

    names = _bad_containers(spec, bad)
    if not names:
        return None
    types = sorted({str(_context(c)["procMount"]) for c in _all_containers(spec) if bad(c)})
    return "procMount", f"{_containers(names)} must not set securityContext.procMount to " + (
        _quote(types)
    )


def _seccomp_setters(spec: Obj) -> tuple[list[str], list[str], list[str]]:
    """Who sets a seccomp type other than RuntimeDefault/Localhost ("pod", then `container(s)
    "x"`), the bad types, and the containers that set none under a pod that sets no good one."""
    setters, values = [], set()
    pod_type = ((spec.get("securityContext") or {}).get("seccompProfile") or {}).get("type")
    pod_set = pod_type is not None and pod_type in VALID_SECCOMP
    if pod_type is not None and not pod_set:
        setters.append("pod")
        values.add(str(pod_type))
    explicit, implicit = [], []
    for container in _all_containers(spec):
        profile = _context(container).get("seccompProfile")
        if profile is not None:
            if profile.get("type") not in VALID_SECCOMP:
                explicit.append(container.get("name", ""))
                values.add(str(profile.get("type")))
        elif not pod_set:
            implicit.append(container.get("name", ""))
    if explicit:
        setters.append(_containers(explicit))
    return setters, sorted(values), implicit


def _seccomp(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    setters, values, _ = _seccomp_setters(spec)
    if not setters:
        return None
    return "seccompProfile", (
        f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to "
        f"{_quote(values)}"
    )


def _sysctls(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    sysctls = (spec.get("securityContext") or {}).get("sysctls") or []
    bad = [s.get("name", "") for s in sysctls if s.get("name") not in SAFE_SYSCTLS]
    return ("forbidden sysctls", ", ".join(bad)) if bad else None


# -- the restricted checks --------------------------------------------------------------------
def _allow_privilege_escalation(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    def escalates(container: Obj) -> bool:
        return _context(container).get("allowPrivilegeEscalation") is not False

    names = _bad_containers(spec, escalates)
    if not names:
        return None
    return (
        "allowPrivilegeEscalation != false",
        f"{_containers(names)} must set securityContext.allowPrivilegeEscalation=false",
    )


def _capabilities_restricted(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    missing_drop, adding, forbidden = [], [], set()
    for container in _all_containers(spec):
        capabilities = _context(container).get("capabilities")
        if capabilities is None:
            missing_drop.append(container.get("name", ""))
            continue
        if "ALL" not in (capabilities.get("drop") or []):
            missing_drop.append(container.get("name", ""))
        added = [c for c in capabilities.get("add") or [] if c != "NET_BIND_SERVICE"]
        if added:
            adding.append(container.get("name", ""))
            forbidden.update(added)
    details = []
    if missing_drop:
        details.append(
            f'{_containers(missing_drop)} must set securityContext.capabilities.drop=["ALL"]'
        )
    if adding:
        details.append(
            f"{_containers(adding)} must not include {_quote(sorted(forbidden))} in "
            "securityContext.capabilities.add"
        )
    return ("unrestricted capabilities", "; ".join(details)) if details else None


def _restricted_volumes(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    names, types = [], set()
    for volume in spec.get("volumes") or []:
        if any(volume.get(kind) is not None for kind in RESTRICTED_ALLOWED_VOLUMES):
            continue
        names.append(volume.get("name", ""))
        named = (t for t in RESTRICTED_VOLUME_NAMES if volume.get(t) is not None)
        types.add(next(named, "unknown"))
    if not names:
        return None
    many = len(names) != 1
    return "restricted volume types", (
        f"{'volumes' if many else 'volume'} {_quote(names)} {'use' if many else 'uses'} "
        f"{'restricted volume types' if len(types) != 1 else 'restricted volume type'} "
        f"{_quote(sorted(types))}"
    )


def _user_namespaced(spec: Obj) -> bool:
    """`hostUsers: false` (KEP-127): runAsNonRoot and runAsUser are relaxed for it."""
    return spec.get("hostUsers") is False


def _run_as_non_root(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    if _user_namespaced(spec):
        return None
    setters = []
    pod_value = (spec.get("securityContext") or {}).get("runAsNonRoot")
    if pod_value is False:
        setters.append("pod")
    explicit, implicit = [], []
    for container in _all_containers(spec):
        value = _context(container).get("runAsNonRoot")
        if value is not None:
            if value is False:
                explicit.append(container.get("name", ""))
        elif pod_value is not True:
            implicit.append(container.get("name", ""))
    if explicit:
        setters.append(_containers(explicit))
    if setters:
        return (
            "runAsNonRoot != true",
            f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false",
        )
    if implicit:
        return (
            "runAsNonRoot != true",
            f"pod or {_containers(implicit)} must set securityContext.runAsNonRoot=true",
        )
    return None


def _run_as_user(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    if _user_namespaced(spec):
        return None
    setters = ["pod"] if (spec.get("securityContext") or {}).get("runAsUser") == 0 else []
    names = _bad_containers(spec, lambda c: _context(c).get("runAsUser") == 0)
    if names:
        setters.append(_containers(names))
    if not setters:
        return None
    return "runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0"


def _seccomp_restricted(meta: Obj, spec: Obj) -> tuple[str, str] | None:
    setters, _, implicit = _seccomp_setters(spec)
    if setters:
        return _seccomp(meta, spec)
    if implicit:
        return "seccompProfile", (
            f"pod or {_containers(implicit)} must set securityContext.seccompProfile.type to "
            '"RuntimeDefault" or "Localhost"'
        )
    return None


Check = Callable[[Obj, Obj], "tuple[str, str] | None"]
# The baseline checks every level above privileged runs, in the policy package's order.
BASELINE_CHECKS: tuple[Check, ...] = (
    _app_armor,
    _host_namespaces,
    _host_path_volumes,
    _host_ports,
    _privileged,
    _proc_mount,
    _sysctls,
)
# Baseline's checks that restricted replaces (`Overlap`): run at baseline only, after the rest.
OVERLAPPING_BASELINE_CHECKS: tuple[Check, ...] = (_capabilities, _seccomp)
RESTRICTED_CHECKS: tuple[Check, ...] = (
    _allow_privilege_escalation,
    _capabilities_restricted,
    _restricted_volumes,
    _run_as_non_root,
    _run_as_user,
    _seccomp_restricted,
)
LEVELS = {
    "baseline": BASELINE_CHECKS + OVERLAPPING_BASELINE_CHECKS,
    "restricted": BASELINE_CHECKS + RESTRICTED_CHECKS,
}


def violations(pod: Obj, level: str = "baseline") -> list[str]:
    """`reason (detail)` for every check of `level` the pod fails."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    found = [check(meta, spec) for check in LEVELS[level]]
    return [f"{reason} ({detail})" for reason, detail in filter(None, found)]


def admit_pod(namespace: Obj, pod: Obj) -> ApiError | None:
    """None when the namespace's enforced level admits the pod, else the 403 to answer."""
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    level = labels.get(ENFORCE_LABEL)
    if level not in LEVELS:
        return None  # privileged, or unlabelled (the cluster default here is privileged)
    failed = violations(pod, level)
    if not failed:
        return None
    name = (pod.get("metadata") or {}).get("name", "")
    version = labels.get(ENFORCE_VERSION_LABEL, "latest")
    return ApiError(
        403,
        "Forbidden",
        f'pods "{name}" is forbidden: violates PodSecurity "{level}:{version}": '
        + ", ".join(failed),
        name,
        "pods",
    )
