"""A test session's log records go to its log file, not to the terminal: the functions'
powertools records, the local cloud's own, and its child processes' output; pytest's log
capture still sees the records, for a failing test's report."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudev.observability import logger
from localcloud.child_process import ChildProcess
from tests.support.test_logs import ROOT, route_logs


@pytest.fixture
def routed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The session's routing, pointed at a file of this test's and undone afterwards."""
    path = tmp_path / "test-logs" / "session.log"
    monkeypatch.setenv("LOCALCLOUD_CHILD_OUTPUT", "")  # restored after route_logs sets it
    local_cloud = logging.getLogger("localcloud")
    stream, handlers, level = (
        logger.registered_handler.stream,
        local_cloud.handlers[:],
        (local_cloud.level),
    )
    opened = route_logs(path)
    yield path
    logger.registered_handler.setStream(stream)
    local_cloud.handlers[:] = handlers
    local_cloud.setLevel(level)
    opened.close()


def test_the_functions_and_the_local_clouds_records_go_to_the_file(routed, capfd, caplog):
    logger.info("reservation granted", extra={"reservation_id": "abc"})
    logging.getLogger("localcloud.events").info("Jobs: 1 delivered, 0 failed")
    function_record, local_cloud_record = routed.read_text().splitlines()
    assert json.loads(function_record)["message"] == "reservation granted"
    assert "localcloud.events" in local_cloud_record and "Jobs: 1 delivered" in local_cloud_record
    out, err = capfd.readouterr()
    assert "reservation granted" not in out + err
    assert "Jobs: 1 delivered" not in out + err
    messages = [record.getMessage() for record in caplog.records]
    assert "reservation granted" in messages and "Jobs: 1 delivered, 0 failed" in messages


def test_a_child_processs_output_goes_to_the_file(routed, capfd):
    child = ChildProcess("tests.unit.test_test_logs", [], None)
    try:
        child.process.wait(timeout=60)
    finally:
        child.end()
    deadline = time.monotonic() + 10
    while "from the child" not in routed.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "from the child on stderr" in routed.read_text()
    assert "from the child on stdout" in routed.read_text()
    out, err = capfd.readouterr()
    assert "from the child" not in out + err


if __name__ == "__main__":  # the child: `python -m tests.unit.test_test_logs FD`
    print("from the child on stdout", flush=True)
    print("from the child on stderr", file=sys.stderr, flush=True)


def test_a_failing_session_names_its_log_file_and_a_passing_one_does_not(tmp_path: Path):
    (tmp_path / "test_one.py").write_text(
        "import logging, os\n"
        "def test_it():\n"
        "    logging.getLogger('localcloud.events').info('from the session')\n"
        "    assert os.environ['OUTCOME'] == 'pass'\n"
    )
    log = tmp_path / "session.log"

    def session(outcome: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "tests.conftest", str(tmp_path / "test_one.py")],
            cwd=ROOT,
            env={**os.environ, "GPUDEV_TEST_LOG": str(log), "OUTCOME": outcome},
            capture_output=True,
            text=True,
            timeout=120,
        )

    failed = session("fail")
    assert failed.returncode == 1, failed.stdout
    assert f"the local cloud's and the functions' logs: {log}" in failed.stdout
    assert "from the session" in log.read_text()
    assert "from the session" in failed.stdout  # the failing test's captured log
    passed = session("pass")
    assert passed.returncode == 0, passed.stdout
    assert "logs:" not in passed.stdout
