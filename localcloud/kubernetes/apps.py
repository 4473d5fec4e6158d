"""apps/v1 for the stand-in: DaemonSet, stored and served like the other kinds (the store and
the server look up a resource's group here), defaulted and validated as kube-apiserver does
(`pkg/apis/apps/validation.ValidateDaemonSet`, `pkg/apis/apps/v1/defaults.go`) in the fields
we use: a selector that is required, not empty, matches the template's labels and never
changes; the template validated as a pod's spec, restartPolicy Always only, no
activeDeadlineSeconds; the update strategy (RollingUpdate with maxUnavailable/maxSurge, or
OnDelete); `metadata.generation` counting spec changes. The controller that runs the pods is
`daemonsets.py`.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from localcloud.kubernetes import pod_validation, rules, selectors
from localcloud.kubernetes.rules import FieldError, invalid, required

Obj = dict[str, Any]
GROUP = "apps"
VERSION = "v1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
RESOURCES = {"daemonsets": ("DaemonSet", True)}  # resource -> (kind, namespaced)
STRATEGIES = ("RollingUpdate", "OnDelete")
_PERCENT = re.compile(r"^[0-9]+%$")
_PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' "
    "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
)


class _GoMap:
    """A label map as the API server prints it in a message (`map[string]string{"a":"b"}`,
    unquoted, where a string value would be quoted)."""

    def __init__(self, values: dict[str, Any]):
        inner = ", ".join(
            f"{json.dumps(k)}:{json.dumps(str(v))}" for k, v in sorted(values.items())
        )
        self._text = "map[string]string{" + inner + "}"

    def __str__(self) -> str:
        return self._text


def selector_matches(selector: Obj, labels: dict[str, str]) -> bool:
    """`metav1.LabelSelectorAsSelector(selector).Matches(labels)`."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(
        selectors.expression_matches(labels, e) for e in selector.get("matchExpressions") or []
    )


def _selector(selector: Any) -> list[FieldError]:
    if not isinstance(selector, dict):
        return [required("spec.selector")]
    errors = rules.labels(selector.get("matchLabels") or {}, "spec.selector.matchLabels")
    for index, expression in enumerate(selector.get("matchExpressions") or []):
        at = f"spec.selector.matchExpressions[{index}]"
        errors += rules.supported(
            f"{at}.operator", expression.get("operator"), ("In", "NotIn", "Exists", "DoesNotExist")
        )
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errors += invalid("spec.selector", selector, ["empty selector is invalid for daemonset"])
    return errors


def _int_or_percent(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, bool) or not isinstance(value, int | str):
        return invalid(path, value, ["must be an integer or percentage (e.g '5%')"])
    if isinstance(value, str):
        if not _PERCENT.match(value):
            return invalid(
                path,
                value,
                [_PERCENT_MESSAGE],
            )
        if int(value[:-1]) > 100:
            return invalid(path, value, ["must not be greater than 100%"])
        return []
    return invalid(path, value, ["must be greater than or equal to 0"]) if value < 0 else []


def _zero(value: Any) -> bool:
    return value in (0, "0%")


def _update_strategy(strategy: Obj) -> list[FieldError]:
    path = "spec.updateStrategy"
    kind = strategy.get("type")
    errors = (
        rules.supported(f"{path}.type", kind, STRATEGIES) if kind else [required(f"{path}.type")]
    )
    if kind != "RollingUpdate":
        return errors
    rolling = strategy.get("rollingUpdate")
    if not isinstance(rolling, dict):
        return [*errors, required(f"{path}.rollingUpdate")]
    at = f"{path}.rollingUpdate"
    unavailable, surge = rolling.get("maxUnavailable", 1), rolling.get("maxSurge", 0)
    errors += _int_or_percent(unavailable, f"{at}.maxUnavailable")
    errors += _int_or_percent(surge, f"{at}.maxSurge")
    if _zero(unavailable) and _zero(surge):
        errors += invalid(
            f"{at}.maxUnavailable", unavailable, ["may not be 0 when `maxSurge` is 0"]
        )
    if not _zero(unavailable) and not _zero(surge):
        errors += invalid(
            f"{at}.maxSurge", surge, ["may not be set when maxUnavailable is non-zero"]
        )
    return errors


def _template(template: Any) -> list[FieldError]:
    if not isinstance(template, dict):
        return [required("spec.template")]
    meta = template.get("metadata") or {}
    errors = rules.labels(meta.get("labels") or {}, "spec.template.metadata.labels")
    spec = template.get("spec") or {}
    errors += [
        FieldError(e.type, "spec.template." + e.field, e.detail, e.value)
        for e in pod_validation.pod({"spec": spec})
        if e.field != "spec.restartPolicy"
    ]
    restart = spec.get("restartPolicy", "Always")
    errors += rules.supported("spec.template.spec.restartPolicy", restart, ("Always",))
    if spec.get("activeDeadlineSeconds") is not None:
        errors += invalid(
            "spec.template.spec.activeDeadlineSeconds",
            spec["activeDeadlineSeconds"],
            ["activeDeadlineSeconds in DaemonSet is not Supported"],
        )
    return errors


def daemon_set(obj: Obj) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errors = _selector(spec.get("selector"))
    template = spec.get("template")
    labels = ((template or {}).get("metadata") or {}).get("labels") or {}
    if isinstance(spec.get("selector"), dict) and not selector_matches(spec["selector"], labels):
        errors += [
            FieldError(
                "Invalid value",
                "spec.template.metadata.labels",
                "`selector` does not match template `labels`",
                _GoMap(labels),
            )
        ]
    errors += _template(template)
    errors += _update_strategy(
        spec.get("updateStrategy") or {"type": "RollingUpdate", "rollingUpdate": {}}
    )
    if (spec.get("minReadySeconds") or 0) < 0:
        errors += invalid(
            "spec.minReadySeconds", spec["minReadySeconds"], ["must be greater than or equal to 0"]
        )
    return errors


def quantities(obj: Obj) -> None:
    """The template's quantities decode as a pod's (400 when one does not parse)."""
    pod_validation.quantities((obj.get("spec") or {}).get("template") or {})


def daemon_set_update(new: Obj, current: Obj) -> list[FieldError]:
    before, after = current["spec"].get("selector"), (new.get("spec") or {}).get("selector")
    if after != before:
        return invalid("spec.selector", after, ["field is immutable"])
    return []


def default(obj: Obj, current: Obj | None = None) -> None:
    """On every write, as the API server decodes: the strategy's defaults (the template's
    are a pod spec's, `object_defaults.default_pod_spec`, which the caller applies first);
    `generation` 1 at create, one more whenever the spec changes."""
    spec = obj.setdefault("spec", {})
    strategy = spec.setdefault("updateStrategy", {"type": "RollingUpdate"})
    if strategy.get("type") == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", 1)
        rolling.setdefault("maxSurge", 0)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("template", {}).setdefault("metadata", {})
    metadata = obj.setdefault("metadata", {})
    if current is None:
        metadata["generation"] = 1
        obj["status"] = {
            "currentNumberScheduled": 0,
            "desiredNumberScheduled": 0,
            "numberMisscheduled": 0,
            "numberReady": 0,
        }
    else:
        generation = current["metadata"].get("generation", 1)
        changed = copy.deepcopy(spec) != current.get("spec")
        metadata["generation"] = generation + 1 if changed else generation
