"""What gpudev/image_builds/builds.py reads from CodeBuild and its log, without I/O: a build's
status and phase (a failure names the phase that failed), docker's step from either
builder's output, the log's tail bounded, and the status line."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpudev.image_builds.builds import (
    LOG_TAIL_CHARS,
    LOG_TAIL_LINES,
    build_step,
    log_tail,
    read_codebuild_build,
    status_line,
)
from gpudev.repositories.image_builds import ImageBuildRow


def test_a_running_build_is_building_in_its_current_phase_with_its_log():
    state = read_codebuild_build(
        {
            "buildStatus": "IN_PROGRESS",
            "currentPhase": "BUILD",
            "logs": {"groupName": "/aws/codebuild/p", "streamName": "s"},
        }
    )
    assert (state.status, state.phase, state.log_group, state.log_stream) == (
        "building",
        "BUILD",
        "/aws/codebuild/p",
        "s",
    )


@pytest.mark.parametrize("status", ["FAILED", "FAULT", "TIMED_OUT", "STOPPED"])
def test_every_other_ending_is_a_failure_naming_the_phase_that_failed(status):
    state = read_codebuild_build(
        {
            "buildStatus": status,
            "currentPhase": "COMPLETED",
            "phases": [
                {"phaseType": "SUBMITTED", "phaseStatus": "SUCCEEDED"},
                {"phaseType": "BUILD", "phaseStatus": "FAILED"},
                {"phaseType": "COMPLETED"},
            ],
        }
    )
    assert state.status == "failed"
    assert state.phase == f"{status.lower().replace('_', ' ')} in BUILD"


def test_a_succeeded_build_succeeded():
    assert read_codebuild_build({"buildStatus": "SUCCEEDED"}).status == "succeeded"


@pytest.mark.parametrize(
    ("lines", "step"),
    [
        (["Step 1/12 : FROM a", "Step 5/12 : RUN make", " ---> Running in 1"], "step 5/12"),
        (["#5 [2/7] RUN pip install x", "#6 [stage-1 3/7] COPY . ."], "step 3/7"),
        (["[Container] Entering phase BUILD"], None),
    ],
)
def test_the_step_is_the_last_one_the_log_shows(lines, step):
    assert build_step(lines) == step


def test_the_tail_is_the_last_lines_and_bounded_in_characters():
    lines = [f"line {n}" for n in range(100)]
    tail = log_tail(lines)
    assert tail.splitlines() == lines[-LOG_TAIL_LINES:]
    assert len(log_tail(["x" * 1000] * 10)) == LOG_TAIL_CHARS


def test_the_status_line_names_the_phase():
    row = ImageBuildRow(
        context_hash="a" * 64,
        status="building",
        phase="BUILD, step 5/12",
        claimed_at=datetime.now(UTC),
    )
    assert status_line(row) == "building image: build, step 5/12"
    assert status_line(row.model_copy(update={"phase": None})) == "building image: starting"
