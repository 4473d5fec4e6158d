"""The API server's errors: an exception that renders as a Kubernetes Status object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]


@dataclass
class ApiError(Exception):
    code: int
    reason: str
    message: str
    name: str | None = None
    kind: str | None = None
    causes: list[dict[str, str]] | None = None

    def status(self) -> Obj:
        details: Obj = {"name": self.name, "kind": self.kind} if self.name else {}
        if self.causes is not None:
            details = {"kind": self.kind, **details, "causes": self.causes}
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "details": details,
            "code": self.code,
        }
