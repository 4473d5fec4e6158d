"""The deployment, declared once: functions (and, as they land, queues, state machines and
schedules). The CDK stack and the local cloud both render this; a parity test fails when
one of them has something the other lacks.

Pure data, no aws_cdk import: the local cloud reads it without loading CDK.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FunctionSpec:
    name: str  # logical name: construct id prefix, local registry key
    folder: str  # functions/<folder> is the code asset
    handler: str = "handler.handler"
    memory_mb: int = 512
    timeout_seconds: int = 30
    uses_database: bool = True
    environment: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ApiSpec:
    function: str  # the FunctionSpec serving every route
    public_paths: tuple[str, ...]  # no IAM auth; everything else requires it


MIGRATE = FunctionSpec("Migrate", "migrate", timeout_seconds=300)
API = FunctionSpec("Api", "api", memory_mb=1024, timeout_seconds=29)

FUNCTIONS: tuple[FunctionSpec, ...] = (MIGRATE, API)
REST_API = ApiSpec(function=API.name, public_paths=("/health",))


def function(name: str) -> FunctionSpec:
    return next(spec for spec in FUNCTIONS if spec.name == name)
