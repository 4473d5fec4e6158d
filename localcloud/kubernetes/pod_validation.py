"""Pod validation (`ValidatePodSpec`, the parts our manifests use): containers and init
containers (names unique across both, no probes or lifecycle hooks on an init container),
ports, env, volumes and their mounts, resources, readiness probes, termination message
policy, hostname/subdomain, restart policy, node selector."""

from __future__ import annotations

from typing import Any

from localcloud.kubernetes import readiness, rules
from localcloud.kubernetes.rules import FieldError, invalid, required

Obj = dict[str, Any]


def _is_extended(resource: str) -> bool:
    """Extended resources (nvidia.com/gpu): integers, requests equal to limits."""
    return (
        "/" in resource
        and "kubernetes.io/" not in resource
        and not resource.startswith("requests.")
    )


def _resources(resources: Obj, path: str) -> list[FieldError]:
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    errors = []
    for group, values in (("limits", limits), ("requests", requests)):
        for name, raw in values.items():
            amount, at = rules.quantity(raw), f"{path}.{group}[{name}]"
            errors += invalid(
                at, str(raw), ["must be greater than or equal to 0"] if amount < 0 else []
            )
            whole = amount == amount.to_integral_value()
            errors += invalid(
                at, str(raw), ["must be an integer"] if _is_extended(name) and not whole else []
            )
    for name, raw in requests.items():
        if name not in limits:
            if _is_extended(name):
                errors.append(
                    required(f"{path}.limits", "Limit must be set for non overcommitable resources")
                )
            continue
        request, limit = rules.quantity(raw), rules.quantity(limits[name])
        if _is_extended(name) and request != limit:
            errors += invalid(
                f"{path}.requests", str(raw), [f"must be equal to {name} limit of {limits[name]}"]
            )
        elif request > limit:
            errors += invalid(
                f"{path}.requests",
                str(raw),
                [f"must be less than or equal to {name} limit of {limits[name]}"],
            )
    return errors


def _container(container: Obj, path: str, volumes: set[str]) -> list[FieldError]:
    errors = [] if container.get("image") else [required(f"{path}.image")]
    ports = container.get("ports") or []
    errors += rules.unique_names(ports, f"{path}.ports", rules.port_name, require=False)
    for index, port in enumerate(ports):
        at, number = f"{path}.ports[{index}].containerPort", port.get("containerPort")
        errors += [required(at)] if not number else invalid(at, number, rules.port_number(number))
    for index, env in enumerate(container.get("env") or []):
        at, name = f"{path}.env[{index}].name", env.get("name") or ""
        errors += invalid(at, name, rules.env_var_name(name)) if name else [required(at)]
    mount_paths: set[str] = set()
    for index, mount in enumerate(container.get("volumeMounts") or []):
        at, name, mount_path = (
            f"{path}.volumeMounts[{index}]",
            mount.get("name") or "",
            mount.get("mountPath") or "",
        )
        errors += [] if name else [required(f"{at}.name")]
        errors += [] if name in volumes else [FieldError("Not found", f"{at}.name", "", name)]
        errors += [] if mount_path else [required(f"{at}.mountPath")]
        errors += invalid(
            f"{at}.mountPath", mount_path, ["must be unique"] if mount_path in mount_paths else []
        )
        mount_paths.add(mount_path)
    errors += readiness.validate(container, path)
    errors += rules.supported(
        f"{path}.terminationMessagePolicy",
        container.get("terminationMessagePolicy"),
        ("File", "FallbackToLogsOnError"),
    )
    return errors + _resources(container.get("resources") or {}, f"{path}.resources")


# What a (non-sidecar) init container may not have: it runs to completion before the pod's
# containers start, so nothing probes it and nothing hooks its stop (`validateInitContainers`).
INIT_FORBIDDEN = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")


def _init_containers(init: list[Obj], container_names: set[Any]) -> list[FieldError]:
    """Names unique across containers and init containers (one namespace of names in the
    pod's status and its logs); no probes or hooks but on a sidecar (restartPolicy: Always,
    which the stand-in does not run as one: we never use it)."""
    errors = []
    for index, container in enumerate(init):
        at = f"spec.initContainers[{index}]"
        name = container.get("name")
        errors += [rules.duplicate(f"{at}.name", name)] if name in container_names else []
        restart = container.get("restartPolicy")
        errors += rules.supported(f"{at}.restartPolicy", restart, ("Always",))
        errors += [
            FieldError(
                "Forbidden",
                f"{at}.{field}",
                "may not be set for init containers without restartPolicy=Always",
            )
            for field in INIT_FORBIDDEN
            if container.get(field) is not None and restart != "Always"
        ]
    return errors


def pod(obj: Obj) -> list[FieldError]:
    spec = obj.get("spec") or {}
    volumes = spec.get("volumes") or []
    errors = rules.unique_names(volumes, "spec.volumes", rules.dns1123_label)
    errors += [
        required(f"spec.volumes[{i}]", "must specify a volume type")
        for i, volume in enumerate(volumes)
        if not set(volume) - {"name"}
    ]
    errors += [
        required(f"spec.volumes[{i}].persistentVolumeClaim.claimName")
        for i, volume in enumerate(volumes)
        if "persistentVolumeClaim" in volume
        and not (volume["persistentVolumeClaim"] or {}).get("claimName")
    ]
    containers, init = spec.get("containers") or [], spec.get("initContainers") or []
    errors += [] if containers else [required("spec.containers")]
    volume_names = {volume.get("name") for volume in volumes}
    for group, items in (("containers", containers), ("initContainers", init)):
        errors += rules.unique_names(items, f"spec.{group}", rules.dns1123_label)
        for index, container in enumerate(items):
            errors += _container(container, f"spec.{group}[{index}]", volume_names)
    errors += _init_containers(init, {c.get("name") for c in containers})
    for key in ("hostname", "subdomain"):
        errors += (
            invalid(f"spec.{key}", spec[key], rules.dns1123_label(spec[key]))
            if spec.get(key)
            else []
        )
    errors += rules.supported(
        "spec.restartPolicy", spec.get("restartPolicy"), ("Always", "OnFailure", "Never")
    )
    return errors + rules.labels(spec.get("nodeSelector") or {}, "spec.nodeSelector")


def quantities(obj: Obj) -> None:
    spec = obj.get("spec") or {}
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        resources = container.get("resources") or {}
        for value in [
            *(resources.get("limits") or {}).values(),
            *(resources.get("requests") or {}).values(),
        ]:
            rules.quantity(value)
    for volume in spec.get("volumes") or []:
        if (volume.get("emptyDir") or {}).get("sizeLimit") is not None:
            rules.quantity(volume["emptyDir"]["sizeLimit"])
