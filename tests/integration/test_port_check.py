"""The up-front port check: busy means something listens, not that a stopped server's
connections linger in TIME_WAIT (a restart right after Ctrl+C)."""

from __future__ import annotations

import socket

import pytest

from localcloud.postgres import PortInUse, require_free_port


def _port_left_in_time_wait() -> int:
    """A port whose server closed first (as ours do after answering), then stopped listening:
    the server side of the connection stays in TIME_WAIT for a minute."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = int(listener.getsockname()[1])
        with socket.create_connection(("127.0.0.1", port)) as client:
            accepted, _ = listener.accept()
            accepted.close()  # the server closes first: its side goes to TIME_WAIT
            client.recv(1)
    return port


def test_a_port_with_only_time_wait_connections_is_free():
    port = _port_left_in_time_wait()
    # What the old check did (a bind without SO_REUSEADDR): refused for about a minute.
    with socket.socket() as plain, pytest.raises(OSError):
        plain.bind(("127.0.0.1", port))
    require_free_port(port, "api port (--api-port)")


def test_a_port_something_listens_on_is_busy_with_a_clear_message():
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as our servers bind
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        with pytest.raises(PortInUse) as refused:
            require_free_port(port, "api port (--api-port)")
    assert str(refused.value) == f"api port (--api-port) {port} on 127.0.0.1 is already in use"


def test_a_port_listened_on_for_every_address_is_busy_on_127_0_0_1():
    with socket.socket() as server:
        server.bind(("0.0.0.0", 0))
        server.listen()
        port = server.getsockname()[1]
        with pytest.raises(PortInUse):
            require_free_port(port)
