"""Whose log a failed start's tail is read from: the init container that failed, else the
pod's container (the API server wants a container named when a pod has init containers)."""

from __future__ import annotations

from gpudev.cluster.failure_log import LIMIT_BYTES, failing_container, stored_text

SPEC = {"containers": [{"name": "gpu-dev"}], "initContainers": [{"name": "jupyter-check"}]}


def _pod(**status: object) -> dict[str, object]:
    return {"metadata": {"name": "p"}, "spec": SPEC, "status": status}


def test_an_init_container_that_failed_is_the_one_read():
    crashed = {"name": "jupyter-check", "restartCount": 2, "state": {"waiting": {}}}
    assert failing_container(_pod(initContainerStatuses=[crashed])) == "jupyter-check"
    ended = {"name": "jupyter-check", "state": {"terminated": {"exitCode": 3}}}
    assert failing_container(_pod(initContainerStatuses=[ended])) == "jupyter-check"


def test_otherwise_the_pods_container_is_read():
    done = {"name": "jupyter-check", "state": {"terminated": {"exitCode": 0}}}
    assert failing_container(_pod(initContainerStatuses=[done])) == "gpu-dev"
    assert failing_container(_pod()) == "gpu-dev"
    assert failing_container({"metadata": {"name": "p"}, "spec": {}, "status": {}}) is None


def test_a_log_is_stored_without_nul_or_escape_sequences_and_bounded():
    """A crashed program's output may hold a NUL, which a text column refuses (psycopg
    raises before the row is written, so the failure's handling would fail), or an escape
    sequence that `gpu-dev show` would print to the owner's terminal."""
    from psycopg.types.string import StrDumper

    raw = "ok\tdone\r\nbinary \x00\x01 here\n\x1b[2J\x1b]0;title\x07cleared\rprogress 100%\n"
    text = stored_text(raw)
    assert text == (
        "ok\tdone\nbinary \ufffd\ufffd here\n\ufffd[2J\ufffd]0;title\ufffdcleared\nprogress 100%\n"
    )
    StrDumper(str).dump(text)  # storable: raises DataError on a NUL
    # whatever the API server sent, LIMIT_BYTES characters at most
    assert len(stored_text("x" * (LIMIT_BYTES * 3))) == LIMIT_BYTES
