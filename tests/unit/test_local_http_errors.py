"""The local HTTP server (localcloud/http.py) stays quiet about clients that go away, but
never about a failure of its own handler: that is logged with its traceback."""

from __future__ import annotations

import http.client
import logging
import time

import pytest

from localcloud.http import LocalHttpServer, RawRequest, Reply


def _broken(request: RawRequest) -> Reply:
    raise RuntimeError("a bug in the handler")


def test_a_handler_that_raises_is_logged_with_its_traceback(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.ERROR, logger="localcloud.http")
    server = LocalHttpServer(_broken, "test")
    server.start()
    try:
        host, port = server.url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            connection.request("GET", "/anything")
            connection.getresponse()
        connection.close()
        deadline = time.monotonic() + 10
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        server.stop()
    (record,) = [r for r in caplog.records if r.name == "localcloud.http"]
    assert record.exc_info is not None and "a bug in the handler" in str(record.exc_info[1])
