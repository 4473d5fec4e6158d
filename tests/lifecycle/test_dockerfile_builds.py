"""`reserve --dockerfile` and `gpu-dev image` end to end on the local cloud
(docs/images.md#built-images): the CLI uploads the context through the presigned S3 URL,
the reservation's state machine builds it in (moto's, simulated) CodeBuild, the status line
shows the build, and the pod runs the built digest from ECR; the same context again starts
with no build; a failing Dockerfile fails the reservation with the build log's tail; bad
inputs are refused with a sentence and leave nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from localcloud.image_builds import BUILDS_REPOSITORY, PROJECT
from localcloud.lambdas import ACCOUNT_ID
from localcloud.stack import REGION, LocalCloud
from tests.lifecycle.helpers import objects_of, show, wait_for_status
from tests.support.waiting import wait_for

REGISTRY = f"{ACCOUNT_ID}.dkr.ecr.{REGION}.amazonaws.com"
REPOSITORY_URI = f"{REGISTRY}/{BUILDS_REPOSITORY}"


def _context(tmp_path: Path, dockerfile: str, name: str = "ctx") -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "Dockerfile").write_text(dockerfile)
    (root / "train.py").write_text("print('hello')\n")
    (root / "data").mkdir()
    (root / "data" / "big.bin").write_bytes(b"x" * 1000)
    (root / ".dockerignore").write_text("data/\n")
    return root


def _builds_started(cloud: LocalCloud) -> int:
    assert cloud.aws is not None
    return len(cloud.aws.client("codebuild").list_builds_for_project(projectName=PROJECT)["ids"])


def _reserve(gpu_dev: Any, *args: str) -> Any:
    return gpu_dev(
        "--output", "json", "reserve", "-t", "t4", "--hours", "1", "--github-user", "alice", *args
    )


def test_a_dockerfile_is_built_then_its_reservation_runs_the_built_digest(
    api, local_cloud, gpu_dev, tmp_path
):
    root = _context(tmp_path, "FROM ubuntu:24.04\nCOPY train.py /opt/\nRUN apt-get update\n")
    before = _builds_started(local_cloud)
    accepted = _reserve(gpu_dev, "--dockerfile", str(root / "Dockerfile"), "--no-wait")
    assert accepted.exit_code == 0, accepted.output
    rid = json.loads(accepted.output)["reservation_id"]
    context_hash = show(api, rid)["image_build"]
    building = wait_for(
        lambda: (
            (r := show(api, rid))["current_detailed_status"]
            and r["current_detailed_status"].startswith("building image")
            and r
        ),
        message="the status line shows the build",
    )
    assert building["image"] is None
    active = wait_for_status(api, rid, "active", timeout=60)
    build = api.call("GET", f"/v1/images/builds/{context_hash}").body
    assert build["status"] == "succeeded"
    assert active["image"] == f"{REPOSITORY_URI}:{context_hash}"
    assert active["image_digest"] == build["image_digest"]
    (pod,) = objects_of(local_cloud, rid)["pods"]
    assert pod["spec"]["containers"][0]["image"] == f"{REPOSITORY_URI}@{build['image_digest']}"
    assert _builds_started(local_cloud) == before + 1

    # The same context again: nothing to upload, no build, straight to the queue.
    again = _reserve(gpu_dev, "--dockerfile", str(root))
    assert again.exit_code == 0, again.output
    second = json.loads(again.output)
    assert second["status"] == "active"
    assert second["image_digest"] == build["image_digest"]
    assert _builds_started(local_cloud) == before + 1
    listed = api.call("GET", "/v1/images").body["builds"]
    assert [b["status"] for b in listed if b["context_hash"] == context_hash] == ["succeeded"]


def test_the_ignored_files_are_not_part_of_the_hash(gpu_dev, tmp_path):
    root = _context(tmp_path, "FROM ubuntu:24.04\n")
    first = gpu_dev("--output", "json", "image", "build", str(root))
    assert first.exit_code == 0, first.output
    (root / "data" / "big.bin").write_bytes(b"y" * 5000)  # ignored: same context
    second = gpu_dev("--output", "json", "image", "build", str(root))
    assert json.loads(second.output)["context_hash"] == json.loads(first.output)["context_hash"]
    listed = gpu_dev("image", "list")
    assert json.loads(first.output)["context_hash"][:12] in listed.output


def test_a_failing_dockerfile_fails_the_reservation_with_the_build_logs_tail(
    api, local_cloud, gpu_dev, tmp_path
):
    root = _context(tmp_path, "FROM ubuntu:24.04\nRUN echo one\nRUN false\nRUN echo two\n")
    result = _reserve(gpu_dev, "--dockerfile", str(root / "Dockerfile"))
    assert result.exit_code == 1, result.output
    failed = json.loads(result.output)
    assert failed["status"] == "failed"
    assert failed["failure_reason"] == (
        "the image build failed (failed in BUILD): "
        "The command '/bin/sh -c false' returned a non-zero code: 1"
    )
    # The log's tail is on the timeline, as a failed start's pod output is: reserve prints it.
    events = api.call("GET", f"/v1/reservations/{failed['reservation_id']}/events").body
    (tail,) = [e["detail"] for e in events["events"] if e["kind"] == "pod_log"]
    assert "Step 3/4 : RUN false" in tail and "non-zero code: 1" in tail
    panel = gpu_dev("show", failed["reservation_id"])
    assert "Step 3/4 : RUN false" in panel.output

    # Built ahead of time, it fails the same way, saying so.
    started = _builds_started(local_cloud)
    ahead = gpu_dev("image", "build", str(root))
    assert ahead.exit_code == 1
    assert "The build failed" in ahead.output and "non-zero code: 1" in ahead.output
    # It failed just now: asked again, it is not built again, unless asked with --retry.
    assert _builds_started(local_cloud) == started
    retried = gpu_dev("image", "build", "--retry", str(root))
    assert retried.exit_code == 1 and "The build failed" in retried.output
    assert _builds_started(local_cloud) == started + 1


def _counts(api: Any) -> tuple[int, int]:
    reservations = api.call("GET", "/v1/reservations?limit=200").body["reservations"]
    return len(reservations), len(api.call("GET", "/v1/images").body["builds"])


def test_bad_inputs_are_refused_with_a_sentence_and_write_nothing(api, gpu_dev, tmp_path):
    root = _context(tmp_path, "FROM ubuntu:24.04\n")
    before = _counts(api)
    missing = _reserve(gpu_dev, "--dockerfile", str(tmp_path / "nowhere" / "Dockerfile"))
    assert missing.exit_code != 0
    assert "no Dockerfile at" in missing.output
    both = _reserve(gpu_dev, "--dockerfile", str(root), "--image", "ubuntu:24.04")
    assert both.exit_code != 0
    assert "--dockerfile and --image do not go together" in both.output
    lone = _reserve(gpu_dev, "--context", str(root))
    assert lone.exit_code != 0 and "--context goes with --dockerfile" in lone.output
    too_large = api.call(
        "POST", "/v1/images/uploads", body={"context_hash": "b" * 64, "size_bytes": 10**12}
    )
    assert too_large.status == 422
    assert "over this deployment's limit" in too_large.body["message"]
    not_uploaded = api.call(
        "POST",
        "/v1/reservations",
        body={"gpu_type": "t4", "gpu_count": 1, "hours": 1, "image_build": "c" * 64},
    )
    assert not_uploaded.status == 422
    assert "upload it first" in not_uploaded.body["message"]
    assert _counts(api) == before


def test_another_users_context_is_not_found(api, gpu_dev, tmp_path):
    root = _context(tmp_path, "FROM ubuntu:24.04\nRUN echo alice\n")
    built = gpu_dev("--output", "json", "image", "build", str(root))
    context_hash = json.loads(built.output)["context_hash"]
    assert api.call("GET", f"/v1/images/builds/{context_hash}", profile="bob").status == 404
    body = {"gpu_type": "t4", "gpu_count": 1, "hours": 1, "image_build": context_hash}
    assert api.call("POST", "/v1/reservations", profile="bob", body=body).status == 422


def test_a_context_announced_but_never_uploaded_fails_the_reservation_with_a_sentence(api):
    context_hash = "9" * 64
    asked = api.call(
        "POST", "/v1/images/uploads", body={"context_hash": context_hash, "size_bytes": 10}
    )
    assert asked.status == 200 and asked.body["action"] == "upload"
    body = {
        "gpu_type": "t4",
        "gpu_count": 1,
        "hours": 1,
        "github_user": "alice",
        "image_build": context_hash,
    }
    reservation = api.call("POST", "/v1/reservations", body=body).body
    failed = wait_for_status(api, reservation["reservation_id"], "failed", timeout=30)
    reason = failed["failure_reason"]
    assert "the image build did not start: no uploaded context 999999999999" in reason
