"""networking.k8s.io/v1 for the stand-in: NetworkPolicy, stored and served like the core
kinds (the store and the server look up a resource's group here), and validated as
kube-apiserver validates it (`pkg/apis/networking/validation`), in its essentials: the
name, labels and selectors, policy types, ports (1-65535 or a port name, endPort), protocols,
peers (one kind each) and ipBlock CIDRs. The stand-in stores policies; it does not enforce
them on traffic (there is none).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from localcloud.kubernetes import rules
from localcloud.kubernetes.rules import FieldError, invalid, required

Obj = dict[str, Any]
GROUP = "networking.k8s.io"
VERSION = "v1"
GROUP_VERSION = f"{GROUP}/{VERSION}"
RESOURCES = {"networkpolicies": ("NetworkPolicy", True)}  # resource -> (kind, namespaced)
POLICY_TYPES = ("Ingress", "Egress")
PROTOCOLS = ("TCP", "UDP", "SCTP")


def _selector(selector: Any, path: str) -> list[FieldError]:
    if not isinstance(selector, dict):
        return []
    errors = rules.labels(selector.get("matchLabels") or {}, f"{path}.matchLabels")
    for index, expression in enumerate(selector.get("matchExpressions") or []):
        at = f"{path}.matchExpressions[{index}]"
        errors += invalid(
            f"{at}.key", expression.get("key", ""), rules.qualified_name(expression.get("key", ""))
        )
        errors += rules.supported(
            f"{at}.operator", expression.get("operator"), ("In", "NotIn", "Exists", "DoesNotExist")
        )
    return errors


def _port(port: Obj, path: str) -> list[FieldError]:
    errors = rules.supported(f"{path}.protocol", port.get("protocol"), PROTOCOLS)
    number, end = port.get("port"), port.get("endPort")
    if isinstance(number, str):
        errors += invalid(f"{path}.port", number, rules.port_name(number))
        if end is not None:
            errors += invalid(
                f"{path}.endPort", end, ["may not be specified when `port` is non-numeric"]
            )
    elif number is not None:
        errors += invalid(f"{path}.port", number, rules.port_number(number))
    if end is not None and not isinstance(number, str):
        if number is None:
            errors += invalid(
                f"{path}.endPort", end, ["may not be specified when `port` is not specified"]
            )
        elif isinstance(end, int) and isinstance(number, int) and end < number:
            errors += invalid(f"{path}.endPort", end, ["must be greater than or equal to `port`"])
        else:
            errors += invalid(f"{path}.endPort", end, rules.port_number(end))
    return errors


def _ip_block(block: Obj, path: str) -> list[FieldError]:
    cidr = block.get("cidr")
    if not cidr:
        return [required(f"{path}.cidr")]
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return invalid(
            f"{path}.cidr",
            cidr,
            ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"],
        )
    errors = []
    for index, excepted in enumerate(block.get("except") or []):
        at = f"{path}.except[{index}]"
        try:
            inner = ipaddress.ip_network(excepted, strict=False)
        except ValueError:
            errors += invalid(
                at, excepted, ["must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
            )
            continue
        if inner.version != network.version or not inner.subnet_of(network):  # type: ignore[arg-type]
            errors += invalid(at, excepted, ["must be a strict subset of `cidr`"])
    return errors


def _peer(peer: Obj, path: str) -> list[FieldError]:
    kinds = [
        key for key in ("podSelector", "namespaceSelector", "ipBlock") if peer.get(key) is not None
    ]
    if not kinds:
        return [required(path, "must specify a peer")]
    if "ipBlock" in kinds and len(kinds) > 1:
        return [FieldError("Forbidden", path, "may not specify both ipBlock and another peer")]
    errors = []
    for key in ("podSelector", "namespaceSelector"):
        errors += _selector(peer.get(key), f"{path}.{key}")
    if peer.get("ipBlock") is not None:
        errors += _ip_block(peer["ipBlock"], f"{path}.ipBlock")
    return errors


def network_policy(obj: Obj) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errors = _selector(spec.get("podSelector"), "spec.podSelector")
    types = spec.get("policyTypes") or []
    for index, policy_type in enumerate(types):
        errors += rules.supported(f"spec.policyTypes[{index}]", policy_type, POLICY_TYPES)
    if len(types) > len(POLICY_TYPES):
        errors.append(
            FieldError(
                "Invalid value",
                "spec.policyTypes",
                "may not specify more than two policyTypes",
                types,
            )
        )
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for index, rule in enumerate(spec.get(direction) or []):
            at = f"spec.{direction}[{index}]"
            for number, port in enumerate(rule.get("ports") or []):
                errors += _port(port, f"{at}.ports[{number}]")
            for number, peer in enumerate(rule.get(peers_key) or []):
                errors += _peer(peer, f"{at}.{peers_key}[{number}]")
    return errors


def default(policy: Obj) -> None:
    """What the API server fills in: TCP for a port without a protocol, and the policy
    types from the rules given (Ingress always; Egress when there are egress rules)."""
    spec = policy.setdefault("spec", {})
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in rule.get("ports") or []:
                port.setdefault("protocol", "TCP")
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
