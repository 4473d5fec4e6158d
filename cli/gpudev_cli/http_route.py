"""How the CLI's client reaches the API: directly, or through the proxy the environment
names (`HTTPS_PROXY`, `HTTP_PROXY`, unless `NO_PROXY` lists the host), as urllib (which the
client used before it kept connections) and botocore do. The HTTP client and urllib are
imported when a route is made, never with the module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from http.client import HTTPConnection


@dataclass(frozen=True)
class Route:
    """How requests reach the API: to `host` (the API's, or a proxy's), HTTPS or not,
    through a `CONNECT` tunnel to `tunnel` when an HTTPS request goes by a proxy; each
    request's target is `target_prefix` + its path, with `headers` added (a plain-HTTP
    proxy's credentials: they are not signed)."""

    host: str
    https: bool
    tunnel: str | None
    tunnel_headers: dict[str, str]
    target_prefix: str
    headers: dict[str, str]

    def connect(self, timeout_seconds: float | None) -> HTTPConnection:
        """The connection (HTTPS verifies the server, as urllib's default did); opened
        lazily by its first request."""
        import http.client

        if not self.https:
            return http.client.HTTPConnection(self.host, timeout=timeout_seconds)
        connection = http.client.HTTPSConnection(self.host, timeout=timeout_seconds)
        if self.tunnel is not None:
            connection.set_tunnel(self.tunnel, headers=self.tunnel_headers)
        return connection


def route_to(api_url: str) -> Route:
    """Directly, or through the proxy the environment names for the API's scheme
    (`HTTPS_PROXY`/`HTTP_PROXY`, unless `NO_PROXY` lists the host), as urllib and botocore
    do: HTTPS in a `CONNECT` tunnel, plain HTTP by absolute URL."""
    split = urlsplit(api_url)
    if split.scheme not in ("http", "https"):
        raise ValueError(f"the gpu-dev API URL must be http:// or https://, not {api_url!r}")
    https, path = split.scheme == "https", split.path.rstrip("/")
    proxy = _proxy_for(split.scheme, split.netloc)
    if proxy is None:
        return Route(split.netloc, https, None, {}, path, {})
    proxy_host, credentials = proxy
    if https:
        return Route(proxy_host, True, split.netloc, credentials, path, {})
    return Route(proxy_host, False, None, {}, f"http://{split.netloc}{path}", credentials)


def _proxy_for(scheme: str, netloc: str) -> tuple[str, dict[str, str]] | None:
    """The proxy (host:port) urllib would use for `scheme://netloc` and the header its
    credentials make, or None: no proxy, or the host is in `NO_PROXY`."""
    import base64
    import urllib.request
    from urllib.parse import unquote

    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(netloc):
        return None
    parsed = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    host = parsed.hostname or ""
    hostport = f"[{host}]:{parsed.port or 80}" if ":" in host else f"{host}:{parsed.port or 80}"
    if parsed.username is None:
        return hostport, {}
    userpass = f"{unquote(parsed.username)}:{unquote(parsed.password or '')}".encode()
    return hostport, {"Proxy-Authorization": "Basic " + base64.b64encode(userpass).decode()}
