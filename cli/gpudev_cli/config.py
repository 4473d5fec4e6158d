"""The CLI's settings file (`~/.config/gpu-dev/config.json`, or under $XDG_CONFIG_HOME) and
where the API URL comes from: --api-url, then $GPU_DEV_API_URL, then the file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

KEYS = ("api_url", "region", "profile", "github_user")


class ConfigError(Exception):
    pass


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "gpu-dev" / "config.json"


def load() -> dict[str, Any]:
    path = config_path()
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc.msg}); fix or delete it") from None
    return data if isinstance(data, dict) else {}


def save(key: str, value: str) -> Path:
    if key not in KEYS:
        raise ConfigError(f"unknown setting {key!r}; settings: {', '.join(KEYS)}")
    if key == "api_url" and not value.startswith(("http://", "https://")):
        raise ConfigError("api_url must start with http:// or https://")
    data = load()
    data[key] = value.rstrip("/") if key == "api_url" else value
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def resolve_api_url(flag: str | None) -> tuple[str, str]:
    """The API URL and where it came from."""
    if flag:
        return flag.rstrip("/"), "--api-url"
    if os.environ.get("GPU_DEV_API_URL"):
        return os.environ["GPU_DEV_API_URL"].rstrip("/"), "GPU_DEV_API_URL"
    if load().get("api_url"):
        return str(load()["api_url"]), str(config_path())
    raise ConfigError(
        "no API URL: pass --api-url, set GPU_DEV_API_URL, or run "
        "`gpu-dev config set api_url https://...`"
    )
