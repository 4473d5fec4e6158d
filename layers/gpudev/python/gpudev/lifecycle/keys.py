"""SSH public keys of GitHub users: the one seam between the lifecycle and the network.
With LIFECYCLE_GITHUB_KEYS_FILE set (the local cloud, tests) keys come from that JSON file
instead of https://github.com/<user>.keys.

Two answers are kept apart: GitHub said the user has no keys (200 with none, or 404: no such
user), which retrying will not change, and GitHub did not answer (unreachable, timed out,
429 or 5xx), `GithubUnavailable`: a ConnectionError, which taxonomy.py maps to `Transient`
(the state machine matches the error's exact name, so no subclass of Transient), so the task
is retried, and a refresh keeps the keys the pod already has. An answer is followed: a key
removed on GitHub goes at the next refresh, and so do all of them when GitHub answers none."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from gpudev.observability import logger

KEY_PREFIXES = ("ssh-rsa ", "ssh-ed25519 ", "ecdsa-sha2-", "sk-ssh-ed25519@", "sk-ecdsa-")
GITHUB = "https://github.com"
NO_SUCH_USER = 404


class GithubUnavailable(ConnectionError):
    """GitHub did not answer a key fetch: try again later."""


class GithubKeys:
    def __init__(
        self,
        keys_file: str | None = None,
        timeout_seconds: float = 5.0,
        base_url: str = GITHUB,
    ):
        self._keys_file = Path(keys_file) if keys_file else None
        self._timeout = timeout_seconds
        self._base_url = base_url.rstrip("/")

    def _fetch(self, user: str) -> str:
        if self._keys_file is not None:
            return self._from_file(user)
        url = f"{self._base_url}/{urllib.parse.quote(user, safe='')}.keys"
        try:
            with urllib.request.urlopen(url, timeout=self._timeout) as response:
                return str(response.read().decode())
        except urllib.error.HTTPError as exc:
            if exc.code == NO_SUCH_USER:
                return ""
            raise GithubUnavailable(
                f"GitHub answered HTTP {exc.code} for {user}'s SSH keys; will try again"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:  # URLError, refused, reset, timed out
            raise GithubUnavailable(
                f"GitHub did not answer for {user}'s SSH keys ({exc}); will try again"
            ) from None

    def _from_file(self, user: str) -> str:
        """The file plays GitHub: one that can't be read or parsed (caught mid-write) is
        GitHub not answering, never an answer of no keys nor a failed reservation."""
        assert self._keys_file is not None
        try:
            known: dict[str, list[str]] = json.loads(self._keys_file.read_text())
        except (OSError, ValueError) as exc:
            raise GithubUnavailable(
                f"the keys file did not answer for {user}'s SSH keys ({exc}); will try again"
            ) from None
        return "\n".join(known.get(user, []))

    def keys(self, user: str) -> list[str]:
        """The user's public keys ([] when they have none); GithubUnavailable when GitHub
        did not answer."""
        try:
            text = self._fetch(user)
        except GithubUnavailable as exc:
            logger.warning("could not fetch GitHub keys", extra={"user": user, "error": str(exc)})
            raise
        return [line.strip() for line in text.splitlines() if line.startswith(KEY_PREFIXES)]

    def authorized_keys(self, users: list[str]) -> str:
        lines: list[str] = []
        for user in dict.fromkeys(users):
            lines += [f"{key} {user}@github" for key in self.keys(user)]
        return "\n".join(lines) + ("\n" if lines else "")

    def refreshed(self, users: list[str], installed: str | None) -> str:
        """At a refresh: the users' keys as GitHub has them now (none when it answered
        none: keys deleted on GitHub stop opening the pod), or the `installed` ones when
        GitHub did not answer (a failed fetch never locks anyone out). With nothing
        installed yet (None: a user just added) and no answer, GithubUnavailable: the
        refresh is tried again."""
        try:
            return self.authorized_keys(users)
        except GithubUnavailable:
            if installed is not None:
                return installed
            raise
