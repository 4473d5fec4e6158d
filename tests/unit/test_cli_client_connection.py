"""The CLI's client keeps its connection between requests (HTTP/1.1 keep-alive), replaces one
the server closed, and sends an idempotent request once more when a kept connection was lost
before any answer came (a POST: a clear error instead); a local server's stop closes the
connections it kept open."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import botocore.session
import pytest

from gpudev_cli.client import CliError, SigV4Client
from localcloud.http import LocalHttpServer, RawRequest, Reply


class Recorder:
    """A server's handler that answers 200 and records which connection (its thread) and
    path each request came on."""

    def __init__(self, name: str = "first") -> None:
        self.name = name
        self.seen: list[tuple[int, str]] = []

    def __call__(self, request: RawRequest) -> Reply:
        self.seen.append((threading.get_ident(), request.raw_path))
        return 200, {}, f'{{"server": "{self.name}"}}'.encode()


@pytest.fixture
def clients() -> Iterator[Callable[[str], SigV4Client]]:
    """Clients for a URL; their kept connections are closed after the test."""
    made: list[SigV4Client] = []

    def make(url: str) -> SigV4Client:
        made.append(SigV4Client(url, botocore.session.Session(), "us-east-2", timeout_seconds=5))
        return made[-1]

    yield make
    for client in made:
        client.close()


def test_requests_of_one_client_share_one_connection(clients: Callable[[str], SigV4Client]):
    recorder = Recorder()
    server = LocalHttpServer(recorder, "test")
    server.start()
    try:
        client = clients(server.url)
        for path in ("/a", "/b", "/c"):
            assert client.send("GET", path, {}).status == 200
        assert [path for _, path in recorder.seen] == ["/a", "/b", "/c"]
        assert len({connection for connection, _ in recorder.seen}) == 1
    finally:
        server.stop()


def test_a_stop_closes_kept_connections_and_the_next_request_reaches_the_new_server(
    clients: Callable[[str], SigV4Client],
):
    first = Recorder("first")
    server = LocalHttpServer(first, "test")
    server.start()
    port = int(server.url.rsplit(":", 1)[1])
    client = clients(server.url)
    assert client.send("GET", "/before", {}).body == {"server": "first"}
    server.stop()
    second = Recorder("second")
    restarted = LocalHttpServer(second, "test", port)
    restarted.start()
    try:
        assert client.send("GET", "/after", {}).body == {"server": "second"}
        assert first.seen[-1][1] == "/before" and [p for _, p in second.seen] == ["/after"]
    finally:
        restarted.stop()


def _server_losing_the_second_request() -> tuple[socket.socket, list[bytes]]:
    """A raw HTTP/1.1 server: it answers its first connection's first request with keep-alive,
    then reads the next request on that connection and closes it unanswered (a server that
    closed an idle connection as the request was on its way); later connections are answered."""
    listener = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def answer(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

    def serve() -> None:
        first, _ = listener.accept()
        with first:
            received.append(first.recv(65536))
            answer(first)
            received.append(first.recv(65536))  # lost: closed without an answer
        try:
            second, _ = listener.accept()
        except OSError:  # closed by the test: a request not sent again
            return
        with second:
            received.append(second.recv(65536))
            answer(second)

    threading.Thread(target=serve, daemon=True).start()
    return listener, received


@pytest.mark.parametrize(
    ("method", "body", "resent"),
    [
        ("GET", None, True),
        ("PUT", None, True),
        ("DELETE", None, True),
        # Reserve's body carries a `client_request_id`, which the API applies once.
        ("POST", {"gpu_type": "h100", "client_request_id": "5f0c"}, True),
        # An extension's does not: sent twice, it would add its hours twice.
        ("POST", {"hours": 2}, False),
    ],
)
def test_a_request_lost_on_a_kept_connection_is_sent_again_only_when_repeatable(
    clients: Callable[[str], SigV4Client], method: str, body: object, resent: bool
):
    listener, received = _server_losing_the_second_request()
    with listener:
        client = clients(f"http://127.0.0.1:{listener.getsockname()[1]}")
        assert client.call("GET", "/one", signed=False).status == 200
        if resent:
            assert client.call(method, "/two", body, signed=False).status == 200
        else:
            with pytest.raises(CliError, match="may have been applied"):
                client.call(method, "/two", body, signed=False)
    assert [r.split(b" ")[1] for r in received] == [b"/one", b"/two"] + [b"/two"] * resent


def test_an_unreachable_api_is_one_clear_error(clients: Callable[[str], SigV4Client]):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    with pytest.raises(CliError, match="cannot reach the gpu-dev API"):
        clients(f"http://127.0.0.1:{port}").send("GET", "/v1/me", {})


def _proxy(answer: bytes) -> tuple[socket.socket, list[bytes]]:
    """A raw forward proxy's listener: it records the head of each request on its first
    connection and gives `answer` to each (keep-alive for a 200)."""
    listener = socket.create_server(("127.0.0.1", 0))
    heads: list[bytes] = []

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            while head := connection.recv(65536):
                heads.append(head)
                connection.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    return listener, heads


@pytest.fixture
def proxy_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


def test_plain_http_goes_through_the_environments_proxy_with_its_credentials(
    clients: Callable[[str], SigV4Client], proxy_environment: pytest.MonkeyPatch
):
    listener, heads = _proxy(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    with listener:
        port = listener.getsockname()[1]
        proxy_environment.setenv("HTTP_PROXY", f"http://dev:p%40ss@127.0.0.1:{port}")
        client = clients("http://api.example.invalid/prod")
        assert client.send("GET", "/v1/me", {}).status == 200
        assert client.send("GET", "/v1/disks", {}).status == 200
    lines = [head.decode().split("\r\n") for head in heads]
    assert [request[0] for request in lines] == [
        "GET http://api.example.invalid/prod/v1/me HTTP/1.1",
        "GET http://api.example.invalid/prod/v1/disks HTTP/1.1",
    ]
    assert "Host: api.example.invalid" in lines[0]
    assert "Proxy-Authorization: Basic ZGV2OnBAc3M=" in lines[0]  # dev:p@ss


def test_https_goes_through_a_connect_tunnel_and_a_refusal_is_one_clear_error(
    clients: Callable[[str], SigV4Client], proxy_environment: pytest.MonkeyPatch
):
    listener, heads = _proxy(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
    with listener:
        port = listener.getsockname()[1]
        proxy_environment.setenv("HTTPS_PROXY", f"127.0.0.1:{port}")
        client = clients("https://abc123.execute-api.us-east-2.amazonaws.com/prod")
        with pytest.raises(CliError, match=r"cannot reach the gpu-dev API.*407"):
            client.send("GET", "/v1/me", {})
    assert heads[0].startswith(b"CONNECT abc123.execute-api.us-east-2.amazonaws.com:443 ")


def test_a_host_in_no_proxy_is_reached_directly(
    clients: Callable[[str], SigV4Client], proxy_environment: pytest.MonkeyPatch
):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        closed_port = taken.getsockname()[1]
    proxy_environment.setenv("HTTP_PROXY", f"http://127.0.0.1:{closed_port}")
    proxy_environment.setenv("NO_PROXY", "127.0.0.1")
    recorder = Recorder()
    server = LocalHttpServer(recorder, "test")
    server.start()
    try:
        assert clients(server.url).send("GET", "/direct", {}).status == 200
    finally:
        server.stop()
    assert [path for _, path in recorder.seen] == ["/direct"]
