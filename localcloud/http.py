"""A threaded HTTP server on 127.0.0.1 that hands each raw request to one function; the local
API gateway and the Kubernetes stand-in are both built on it.

Connections are kept alive (HTTP/1.1): a client's next request reuses its connection and the
thread serving it, as API Gateway and the Kubernetes API keep theirs. A stop closes the
connections that are open, so no client keeps talking to a server that has stopped.

Given an `ssl.SSLContext` the server speaks HTTPS (the Kubernetes stand-in, as EKS). The
handshake runs on the connection's own thread, never in the accepting loop, so a client
that stalls or speaks plain HTTP holds up only itself."""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class RawRequest:
    method: str
    raw_path: str  # as on the wire: undecoded path and query
    headers: dict[str, str]
    body: bytes
    source_ip: str


Reply = tuple[int, dict[str, str], bytes]
log = logging.getLogger("localcloud.http")
POLL_SECONDS = 0.1  # how often serve_forever looks for a shutdown request
HANDSHAKE_SECONDS = 10.0  # a TLS client silent longer than this is dropped
TLS_HANDSHAKE = b"\x16"  # the first byte of a TLS ClientHello record
PLAIN_HTTP_TO_TLS = (
    b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
    b"Client sent an HTTP request to an HTTPS server.\n"
)
# Go's net/http (kube-apiserver) answers a request it cannot frame, such as one with an
# invalid Content-Length, with this and closes the connection: the body's end is unknown.
BAD_REQUEST = (
    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\n\r\n400 Bad Request"
)


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: a burst of more new connections than that
    # (20 CLI clients at once, bench/api_load.py) was reset or left for a 1 s SYN retry,
    # which API Gateway and the Kubernetes API never do.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]):
        super().__init__(address, handler)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        # Set by a stop: a request read after it is not served (its connection closes
        # unanswered, as a stopped server's would), even one that raced the stop's
        # end_connections into a kept connection's buffer.
        self.stopping = False

    def opened(self, connection: socket.socket) -> None:
        with self._open_lock:
            self._open.add(connection)

    def closed(self, connection: socket.socket) -> None:
        with self._open_lock:
            self._open.discard(connection)

    def end_connections(self) -> None:
        """Each open connection reads end-of-file: an idle one closes now, one being served
        closes once its answer is sent."""
        with self._open_lock:
            connections = list(self._open)
        for connection in connections:
            with contextlib.suppress(OSError):  # closed meanwhile
                # The plain socket's shutdown, also under TLS: SSLSocket.shutdown would drop
                # the TLS state under a thread reading through it.
                socket.socket.shutdown(connection, socket.SHUT_RD)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Called while an exception from serving a connection is handled. A client that
        went away or failed its TLS handshake (OSError, ssl.SSLError) is nothing to report;
        anything else is a bug of ours, logged with its traceback."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        log.exception("serving a connection from %s failed", client_address)


class LocalHttpServer:
    def __init__(
        self,
        handle: Callable[[RawRequest], Reply],
        name: str,
        port: int = 0,
        tls: ssl.SSLContext | None = None,
        any_method: bool = False,
    ):
        """`any_method`: hand requests of every method to `handle` (API Gateway's ANY);
        otherwise GET, POST, PUT, PATCH and DELETE, others answered with Python's HTML 501."""
        self._name = name
        handler = _handler_class(handle, tls is not None, any_method)
        # HTTPServer binds with SO_REUSEADDR: a restart is not refused by TIME_WAIT connections.
        self._server = _Server(("127.0.0.1", port), handler)
        if tls is not None:
            self._server.socket = tls.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
        self._scheme = "https" if tls is not None else "http"
        # Request threads are never joined: one stuck in a slow handler cannot hold up a stop.
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._scheme}://{host!s}:{port}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": POLL_SECONDS},
            name=self._name,
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop accepting and close the listening socket, within one poll interval; requests
        being handled are left to finish on their own threads, then their connections close,
        as idle kept-alive ones do at once."""
        self._server.stopping = True
        if self._thread is not None:  # shutdown() waits forever for a loop that never ran
            self._server.shutdown()
            self._thread = None
        self._server.server_close()
        self._server.end_connections()


class HttpService:
    """A local service answering on a `LocalHttpServer` that the subclass sets as `_server`."""

    _server: LocalHttpServer

    @property
    def url(self) -> str:
        return self._server.url

    def start(self) -> Self:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()


def content_length(values: list[str]) -> int | None:
    """The body's length from a request's Content-Length headers (0 without one), or None
    when Go's net/http would refuse them: not decimal digits (a sign, `1_000`, hex), or
    several that differ."""
    lengths = {value.strip(" \t") for value in values}
    if not lengths:
        return 0
    if len(lengths) > 1:
        return None
    (length,) = lengths
    return int(length) if length.isascii() and length.isdigit() else None


def _handler_class(
    handle: Callable[[RawRequest], Reply], tls: bool, any_method: bool
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body leave together: no 40 ms ACK wait
        server: _Server

        def setup(self) -> None:
            super().setup()
            self.server.opened(self.connection)

        def handle(self) -> None:
            if tls:
                connection = self.connection
                assert isinstance(connection, ssl.SSLSocket)
                connection.settimeout(HANDSHAKE_SECONDS)
                try:
                    # Plain HTTP to the TLS port gets Go's (kube-apiserver's) answer, not a
                    # connection closed in silence. Peeked on the plain socket: no TLS yet.
                    first = socket.socket.recv(connection, 1, socket.MSG_PEEK)
                    if first and first != TLS_HANDSHAKE:
                        socket.socket.sendall(connection, PLAIN_HTTP_TO_TLS)
                        return
                    connection.do_handshake()
                except (ssl.SSLError, OSError):
                    return  # not TLS, or a client that gave up: closed unanswered
                connection.settimeout(None)
            super().handle()

        def finish(self) -> None:
            try:
                super().finish()
            finally:
                self.server.closed(self.connection)

        def _serve(self) -> None:
            if self.server.stopping:
                self.close_connection = True
                return
            length = content_length(self.headers.get_all("Content-Length") or [])
            if length is None:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.wfile.write(BAD_REQUEST)
                return
            request = RawRequest(
                self.command,
                self.path,
                dict(self.headers.items()),
                self.rfile.read(length) if length else b"",
                self.client_address[0],
            )
            status, headers, data = handle(request)
            try:
                self.send_response(status)
                headers.setdefault("Content-Type", "application/json")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (its timeout): nothing to say

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            pass  # each server logs what matters itself

    if not any_method:
        return Handler

    class AnyMethodHandler(Handler):
        def __getattr__(self, name: str) -> Any:
            # BaseHTTPRequestHandler dispatches to `do_<METHOD>`; every one is served.
            if name.startswith("do_"):
                return self._serve
            raise AttributeError(name)

    return AnyMethodHandler
