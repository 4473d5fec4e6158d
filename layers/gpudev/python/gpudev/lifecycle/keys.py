"""SSH public keys of GitHub users: the one seam between the lifecycle and the network.
With LIFECYCLE_GITHUB_KEYS_FILE set (the local cloud, tests) keys come from that JSON file
instead of https://github.com/<user>.keys."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from gpudev.observability import logger

KEY_PREFIXES = ("ssh-rsa ", "ssh-ed25519 ", "ecdsa-sha2-", "sk-ssh-ed25519@", "sk-ecdsa-")


class GithubKeys:
    def __init__(self, keys_file: str | None = None, timeout_seconds: float = 5.0):
        self._keys_file = Path(keys_file) if keys_file else None
        self._timeout = timeout_seconds

    def _fetch(self, user: str) -> str:
        if self._keys_file is not None:
            known: dict[str, list[str]] = json.loads(self._keys_file.read_text())
            return "\n".join(known.get(user, []))
        url = f"https://github.com/{user}.keys"
        with urllib.request.urlopen(url, timeout=self._timeout) as response:
            return str(response.read().decode())

    def keys(self, user: str) -> list[str]:
        """The user's public keys; [] (logged) when they have none or GitHub is unreachable."""
        try:
            text = self._fetch(user)
        except OSError as exc:
            logger.warning("could not fetch GitHub keys", extra={"user": user, "error": str(exc)})
            return []
        return [line.strip() for line in text.splitlines() if line.startswith(KEY_PREFIXES)]

    def authorized_keys(self, users: list[str]) -> str:
        lines: list[str] = []
        for user in dict.fromkeys(users):
            lines += [f"{key} {user}@github" for key in self.keys(user)]
        return "\n".join(lines) + ("\n" if lines else "")
