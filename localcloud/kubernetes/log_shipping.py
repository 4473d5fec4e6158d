"""Fluent Bit, as deploy/kubernetes/fluent-bit.yaml runs it on every EKS node: each line a
container of the dev pods' namespaces prints goes to the dev pods' log group in CloudWatch
Logs (moto here), in the stream its `log_stream_template` names.

The stand-in reads that ConfigMap's own configuration (the tail input's paths, the output's
group, template and fallback prefix), so what the local cloud writes is what the deployed
Fluent Bit would write, and gpudev/logs/ reads both the same way.

The kubelet calls `ship` as a container run begins, with what the run prints
(container_logs.py): nothing for a pod that never ran (unschedulable, an image that cannot
be pulled), the step lines of our startup script, each run of a crash loop's log. Fluent Bit
buffers and retries; here a failed write is logged and dropped, as Fluent Bit drops a chunk
after its retries."""

from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML comes with the kubernetes client; no stubs

log = logging.getLogger("localcloud.cluster")
Obj = dict[str, Any]
MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "fluent-bit.yaml"
_NAMESPACE_GLOB = re.compile(r"\*_([a-z0-9-]+)_\*\.log")
_ACCESSOR = re.compile(r"\$kubernetes((?:\['[^']+'\])+)")
_TAG_PREFIX = "kube.var.log.containers."


@dataclass(frozen=True)
class FluentBitConfig:
    namespaces: frozenset[str]  # whose containers the tail input reads
    log_group: str
    stream_template: str
    stream_prefix: str  # the fallback: prefix + tag, when the template cannot be filled

    @classmethod
    def from_manifest(cls, path: Path = MANIFEST) -> FluentBitConfig:
        config_map = next(
            d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] == "ConfigMap"
        )
        sections = _sections(config_map["data"]["fluent-bit.conf"])
        tail = next(s for name, s in sections if name == "INPUT" and s["Name"] == "tail")
        output = next(s for name, s in sections if name == "OUTPUT")
        return cls(
            namespaces=frozenset(_NAMESPACE_GLOB.findall(tail["Path"])),
            log_group=output["log_group_name"],
            stream_template=output["log_stream_template"],
            stream_prefix=output["log_stream_prefix"],
        )

    def stream_of(self, pod: Obj, container: str, container_id: str) -> str:
        """The stream Fluent Bit's template names for a line of `container` of `pod`."""
        meta = pod["metadata"]
        record = {
            "pod_name": meta["name"],
            "namespace_name": meta["namespace"],
            "container_name": container,
            "labels": meta.get("labels") or {},
        }
        missing = False

        def filled(match: re.Match[str]) -> str:
            nonlocal missing
            value: Any = record
            for key in re.findall(r"\['([^']+)'\]", match[1]):
                value = value.get(key) if isinstance(value, dict) else None
            if not isinstance(value, str):
                missing = True
                return ""
            return value

        name = _ACCESSOR.sub(filled, self.stream_template)
        if not missing:
            return name
        tag = f"{_TAG_PREFIX}{meta['name']}_{meta['namespace']}_{container}-{container_id}.log"
        return f"{self.stream_prefix}{tag}"


def _sections(text: str) -> list[tuple[str, dict[str, str]]]:
    """Fluent Bit's classic configuration: `[SECTION]` then `Key value` lines."""
    sections: list[tuple[str, dict[str, str]]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            sections.append((stripped[1:-1], {}))
            continue
        key, _, value = stripped.partition(" ")
        sections[-1][1][key] = value.strip()
    return sections


class LogShipper:
    """Writes container output into CloudWatch Logs (a moto-bound `logs` client)."""

    def __init__(self, client: Any, config: FluentBitConfig | None = None) -> None:
        self._client = client
        self.config = config or FluentBitConfig.from_manifest()
        self._streams: set[str] = set()

    def ship(self, pod: Obj, container: str, container_id: str, at: str, text: str) -> None:
        if pod["metadata"]["namespace"] not in self.config.namespaces or not text:
            return
        stream = self.config.stream_of(pod, container, container_id)
        stamp = int(datetime.fromisoformat(at).timestamp() * 1000) if at else _now_ms()
        events = [{"timestamp": stamp, "message": line} for line in text.splitlines()]
        try:
            self._ensure_stream(stream)
            self._client.put_log_events(
                logGroupName=self.config.log_group, logStreamName=stream, logEvents=events
            )
        except Exception:  # Fluent Bit would retry, then drop the chunk
            log.exception("shipping %d lines to %s failed", len(events), stream)

    def _ensure_stream(self, stream: str) -> None:
        if stream in self._streams:
            return
        with contextlib.suppress(self._client.exceptions.ResourceAlreadyExistsException):
            self._client.create_log_stream(logGroupName=self.config.log_group, logStreamName=stream)
        self._streams.add(stream)


def _now_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)
