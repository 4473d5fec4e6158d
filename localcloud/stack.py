"""The local cloud as one object: start everything, describe it, stop everything.

Used by `make run` (localcloud/__main__.py) and by the e2e test tier, so both exercise the
same wiring.
"""

from __future__ import annotations

import json
import os
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from cdk_app.declaration import FUNCTIONS, REST_API
from gpudev.db.migrations import apply_migrations
from gpudev.settings import reset_settings_cache
from localcloud.aws import LocalAws, signing_key
from localcloud.gateway import LocalApiGateway
from localcloud.lambdas import LocalLambda
from localcloud.postgres import EmbeddedPostgres

ROOT = Path(__file__).resolve().parent.parent
REGION = "us-east-2"


@dataclass(frozen=True)
class Ports:
    api: int = 0
    aws: int = 0
    postgres: int = 0


class LocalCloud:
    def __init__(self, state_dir: Path, ports: Ports = Ports(), database_url: str | None = None):
        self.state_dir = state_dir
        self.ports = ports
        self._external_database_url = database_url
        self._stack = ExitStack()
        self.database_url = ""
        self.aws: LocalAws | None = None
        self.gateway: LocalApiGateway | None = None
        self.lambdas = LocalLambda(FUNCTIONS, REGION)

    @property
    def credentials_file(self) -> Path:
        return self.state_dir / "aws" / "credentials"

    def start(self) -> LocalCloud:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        if self._external_database_url:
            self.database_url = self._external_database_url
        else:
            pg = EmbeddedPostgres(
                self.state_dir / "postgres" / "data", port=self.ports.postgres or None
            )
            self._stack.enter_context(pg)
            self.database_url = pg.url
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            apply_migrations(conn, ROOT / "migrations")

        self.aws = LocalAws(REGION, port=self.ports.aws).start()
        self._stack.callback(self.aws.stop)
        self.aws.create_users(self.credentials_file)

        # The environment our handlers read through gpudev.settings, as CDK would set it;
        # restored on stop so the process (a test session) is left as it was.
        self._set_environment(
            {
                "DATABASE_URL": self.database_url,
                "AWS_REGION": REGION,
                "AWS_ENDPOINT_URL": self.aws.endpoint_url,
                "POWERTOOLS_TRACE_DISABLED": "true",
                "POWERTOOLS_METRICS_NAMESPACE": "GpuDev",
            }
        )

        self.gateway = LocalApiGateway(
            REST_API, self.lambdas, signing_key, REGION, port=self.ports.api
        ).start()
        self._stack.callback(self.gateway.stop)

    def _set_environment(self, values: dict[str, str]) -> None:
        saved = {name: os.environ.get(name) for name in values}

        def restore() -> None:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            reset_settings_cache()

        os.environ.update(values)
        reset_settings_cache()
        self._stack.callback(restore)

    def describe(self) -> dict[str, Any]:
        assert self.aws and self.gateway
        return {
            "api_url": self.gateway.url,
            "database_url": self.database_url,
            "aws_endpoint_url": self.aws.endpoint_url,
            "region": REGION,
            "credentials_file": str(self.credentials_file),
            "profiles": ["alice", "bob"],
            "kubernetes_url": None,
        }

    def write_description(self) -> Path:
        path = self.state_dir / "stack.json"
        path.write_text(json.dumps(self.describe(), indent=2) + "\n")
        return path

    def stop(self) -> None:
        from gpudev.db.pool import close_pool

        close_pool()
        self._stack.close()
