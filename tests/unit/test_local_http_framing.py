"""The local HTTP server (localcloud/http.py) frames requests as Go's net/http does, the
server kube-apiserver runs on: a Content-Length it cannot read is a 400 and the connection
closes; and only a server made with `any_method` hands every method to its handler."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from localcloud.http import LocalHttpServer, RawRequest, Reply, content_length


def _echo(request: RawRequest) -> Reply:
    return 200, {}, f"{request.method} {len(request.body)}".encode()


@pytest.fixture
def server() -> Iterator[LocalHttpServer]:
    server = LocalHttpServer(_echo, "test")
    server.start()
    yield server
    server.stop()


def _exchange(server: LocalHttpServer, request: bytes) -> bytes:
    """Everything the server sends back before it closes the connection."""
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(request)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


@pytest.mark.parametrize("length", ["abc", "-1", "+5", "1_0", "0x10", "٣"])
def test_an_invalid_content_length_is_a_400_and_the_connection_closes(
    server: LocalHttpServer, length: str
):
    head = f"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n"
    # The connection closing (recv returns b"") is what ends the read: a server that waited
    # for a body would time the test out instead.
    answer = _exchange(server, head.encode() + b"hello")
    assert answer == (
        b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Connection: close\r\n\r\n400 Bad Request"
    )


def test_differing_content_lengths_are_a_400(server: LocalHttpServer):
    request = b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"
    assert _exchange(server, request).startswith(b"HTTP/1.1 400 Bad Request\r\n")


def test_a_valid_content_length_with_spaces_frames_the_body(server: LocalHttpServer):
    request = (
        b"POST /api HTTP/1.1\r\nHost: x\r\nContent-Length:  5 \r\nConnection: close\r\n\r\nhello"
    )
    answer = _exchange(server, request)
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"POST 5")


@pytest.mark.parametrize(
    ("values", "length"),
    [([], 0), (["0"], 0), (["12"], 12), (["7", " 7"], 7), (["1", "2"], None), ([""], None)],
)
def test_content_length_reads_headers_as_go_does(values: list[str], length: int | None):
    assert content_length(values) == length


def test_a_method_outside_get_to_delete_is_refused_unless_the_server_takes_any_method():
    plain = LocalHttpServer(_echo, "plain")
    anything = LocalHttpServer(_echo, "any", any_method=True)
    plain.start()
    anything.start()
    try:
        request = b"OPTIONS /api HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        assert _exchange(plain, request).startswith(b"HTTP/1.1 501 ")
        answer = _exchange(anything, request)
        assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"OPTIONS 0")
    finally:
        plain.stop()
        anything.stop()
