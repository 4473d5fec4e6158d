"""A local cloud's API as tests and bench/ call it: the CLI's own client
(`gpudev_cli.client.SigV4Client`) as any profile of the cloud's credentials file, or
unsigned, plus the pieces tests use to break a signed request (`signed_headers`, `send`)."""

from __future__ import annotations

import configparser
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botocore.credentials import Credentials, ReadOnlyCredentials

from gpudev_cli.client import Reply, SigV4Client, session_for
from localcloud.stack import LocalCloud


@dataclass
class ApiClient:
    api_url: str
    region: str
    credentials_file: Path
    timeout_seconds: float | None = None  # tests wait as long as the server takes
    _clients: dict[str | None, SigV4Client] = field(default_factory=dict, repr=False)

    @classmethod
    def for_cloud(cls, cloud: LocalCloud) -> ApiClient:
        return cls.for_cloud_description(cloud.describe())

    @classmethod
    def for_cloud_description(cls, stack: dict[str, Any]) -> ApiClient:
        """From a cloud's description (`.local/stack.json` of a `python -m localcloud`)."""
        return cls(stack["api_url"], stack["region"], Path(stack["credentials_file"]))

    def as_profile(self, profile: str | None) -> SigV4Client:
        """The CLI's client as `profile` (None: the default chain, for unsigned calls and
        calls signed with credentials given explicitly)."""
        if profile not in self._clients:
            session = session_for(profile, self.region, self.credentials_file)
            self._clients[profile] = SigV4Client(
                self.api_url, session, self.region, self.timeout_seconds
            )
        return self._clients[profile]

    @property
    def profiles(self) -> configparser.ConfigParser:
        """The credentials file as written (keys, session tokens, regions)."""
        profiles = configparser.ConfigParser()
        profiles.read(self.credentials_file)
        return profiles

    def credentials(self, profile: str) -> ReadOnlyCredentials:
        """A profile's keys, with its session token when it has one (the SSO user's)."""
        return self.as_profile(profile).credentials()

    def signed_headers(
        self,
        method: str,
        path: str,
        body: bytes | None,
        credentials: Credentials | ReadOnlyCredentials,
        service: str = "execute-api",
        extra_headers: dict[str, str] | None = None,
    ) -> dict[str, str]:
        return self.as_profile(None).signed_headers(
            method, path, body, credentials, service, extra_headers
        )

    def send(
        self, method: str, path: str, headers: dict[str, str], body: bytes | None = None
    ) -> Reply:
        return self.as_profile(None).send(method, path, headers, body)

    def call(
        self, method: str, path: str, profile: str | None = "alice", body: Any = None
    ) -> Reply:
        """Signed as `profile`, or unsigned when it is None."""
        return self.as_profile(profile).call(method, path, body, signed=profile is not None)
