"""Builds that take time and do what the project's buildspec does (docs/local-cloud.md,
docs/images.md#built-images). moto's CodeBuild completes a build the first time
BatchGetBuilds reads it (every phase SUCCEEDED, phases appended again on each read), drops
StartBuild's `environmentVariablesOverride`, and writes no log. While installed:

- StartBuild keeps the build's environment variables (the project's, then the overrides).
- StartBuild honours `idempotencyToken` as CodeBuild does: the same token again within
  `IDEMPOTENCY_SECONDS` answers the build it started, starting none (moto ignores it).
- A build runs for `seconds` of real time: BatchGetBuilds shows it IN_PROGRESS, its
  `currentPhase` moving through CodeBuild's phases (PROVISIONING … BUILD … POST_BUILD), and
  its log (CloudWatch Logs, `/aws/codebuild/<project>`, one stream per build) growing with
  docker's "Step N/M : …" lines during BUILD.
- Then it does what cdk_app/image_builds.py's buildspec does: reads the context tar
  (s3://$CONTEXT_BUCKET/$CONTEXT_KEY), checks that its sha256 is the tag (a tar other than
  the one announced fails in PRE_BUILD), and builds `Dockerfile.gpu-dev` from it. A `RUN
  false` instruction (or any line holding `gpu-dev: fail`) fails the build at that step,
  with `The command '/bin/sh -c false' returned a non-zero code: 1` in the log, as docker
  says it; otherwise the image is pushed to ECR ($REPOSITORY_URI:$IMAGE_TAG, a manifest
  whose size is the context's plus its base image's) so the stand-in kubelet can pull it.
  A context that is missing or not a tar with that Dockerfile fails in DOWNLOAD_SOURCE.

S3, ECR and CloudWatch Logs are reached through moto's own API (`client`), as the build
would. `install` returns the undo; tests/unit/test_moto_codebuild.py guards the seam."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import re
import tarfile
import threading
import time
from collections.abc import Callable
from typing import Any

from moto.codebuild.models import CodeBuildBackend
from moto.codebuild.responses import CodeBuildResponse
from moto.core.responses import ActionResult

from localcloud.registry import SeededImage, manifest

DOCKERFILE = (
    "Dockerfile.gpu-dev"  # where the CLI puts the Dockerfile (gpudev/image_builds/builds.py)
)
FAIL_MARKER = "gpu-dev: fail"
IDEMPOTENCY_SECONDS = 300  # CodeBuild keeps a StartBuild token for 5 minutes
BASE_IMAGE_BYTES = 200_000_000  # a built image's size: its context plus this
# (phase, fraction of the build's time at which it starts)
PHASES = (
    ("PROVISIONING", 0.0),
    ("DOWNLOAD_SOURCE", 0.1),
    ("INSTALL", 0.15),
    ("PRE_BUILD", 0.2),
    ("BUILD", 0.3),
    ("POST_BUILD", 0.9),
)
_INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)\s+(.*)$")
_lock = threading.Lock()


def dockerfile_steps(text: str) -> list[str]:
    """The Dockerfile's instructions, one per step as docker counts them (continuation lines
    joined, comments and blank lines left out)."""
    steps: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        steps.append((pending + line).strip())
        pending = ""
    if pending.strip():
        steps.append(pending.strip())
    return steps


def failing_step(steps: list[str]) -> int | None:
    """The index of the step that fails, if one is marked to."""
    for index, step in enumerate(steps):
        found = _INSTRUCTION.match(step)
        if FAIL_MARKER in step or (
            found and found.group(1).upper() == "RUN" and found.group(2).strip() == "false"
        ):
            return index
    return None


class CodeBuildSimulation:
    """How long builds run (`seconds` may change at any time: it applies to builds started
    afterwards) and the clients of moto's S3, ECR and CloudWatch Logs."""

    def __init__(self, client: Callable[[str], Any], seconds: float = 3.0):
        self.client = client
        self.seconds = seconds
        self._builds: dict[str, dict[str, Any]] = {}  # build id -> our state of it
        self._tokens: dict[str, tuple[float, dict[str, Any]]] = {}  # token -> (when, build)

    def install(self) -> Callable[[], None]:
        with _lock:
            saved_start = CodeBuildResponse.start_build
            saved_get = CodeBuildBackend.batch_get_builds
            simulation = self

            @functools.wraps(saved_start)
            def start_build(response: CodeBuildResponse) -> Any:
                token = response._get_param("idempotencyToken")
                earlier = simulation._tokens.get(token) if token else None
                if earlier and time.monotonic() - earlier[0] < IDEMPOTENCY_SECONDS:
                    return ActionResult({"build": earlier[1]})
                answer = saved_start(response)
                result = getattr(answer, "result", None)
                build = result.get("build") if isinstance(result, dict) else None
                if build is not None:
                    simulation._stamp(response, build)
                    if token:
                        simulation._tokens[token] = (time.monotonic(), build)
                return answer

            @functools.wraps(saved_get)
            def batch_get_builds(backend: CodeBuildBackend, ids: list[str]) -> Any:
                found = []
                for history in backend.build_metadata_history.values():
                    for build in history:
                        if build["id"] in ids and build["id"] in simulation._builds:
                            simulation._advance(build)
                            found.append(build)
                ours = {b["id"] for b in found}
                rest = [i for i in ids if i not in ours]
                return found + (saved_get(backend, rest) if rest else [])

            CodeBuildResponse.start_build = start_build  # type: ignore[method-assign,assignment]
            CodeBuildBackend.batch_get_builds = batch_get_builds  # type: ignore[method-assign,assignment]

        def uninstall() -> None:
            with _lock:
                CodeBuildResponse.start_build = saved_start  # type: ignore[method-assign]
                CodeBuildBackend.batch_get_builds = saved_get  # type: ignore[method-assign]

        return uninstall

    # -- a build's life ------------------------------------------------------------------
    def _stamp(self, response: CodeBuildResponse, build: dict[str, Any]) -> None:
        project = response.codebuild_backend.codebuild_projects[build["projectName"]]
        variables = {
            v["name"]: v["value"]
            for v in (project.project_metadata.get("environment") or {}).get(
                "environmentVariables", []
            )
        }
        for v in response._get_param("environmentVariablesOverride") or []:
            variables[v["name"]] = v["value"]
        build["environment"]["environmentVariables"] = [
            {"name": k, "value": v, "type": "PLAINTEXT"} for k, v in variables.items()
        ]
        stream = build["id"].split(":", 1)[1]
        group = f"/aws/codebuild/{build['projectName']}"
        build["logs"].update({"groupName": group, "streamName": stream})
        build["phases"] = build["phases"][:1]
        self._builds[build["id"]] = {
            "started": time.monotonic(),
            "seconds": self.seconds,
            "variables": variables,
            "steps": None,  # the Dockerfile's steps, once the source is read
            "fails_at": None,
            "logged": 0,  # steps written to the log
            "done": False,
        }
        logs = self.client("logs")
        with contextlib.suppress(logs.exceptions.ResourceAlreadyExistsException):
            logs.create_log_group(logGroupName=group)
        logs.create_log_stream(logGroupName=group, logStreamName=stream)
        self._log(build, [f"[Container] Waiting for agent ping ({build['id']})"])

    def _advance(self, build: dict[str, Any]) -> None:
        state = self._builds[build["id"]]
        with _lock:
            if state["done"]:
                return
            fraction = (time.monotonic() - state["started"]) / max(state["seconds"], 0.001)
            phase = [name for name, start in PHASES if start <= fraction][-1]
            reads = fraction >= PHASES[1][1] and state["steps"] is None
            if reads and not self._read_source(build):
                return
            if state["steps"] is not None and fraction >= PHASES[4][1]:
                self._log_steps(build, min(1.0, (fraction - 0.3) / 0.6))
                if state["fails_at"] is not None and state["logged"] > state["fails_at"]:
                    self._end(build, "FAILED", "BUILD")
                    return
            if fraction >= 1.0:
                self._push(build)
                return
            build["currentPhase"] = phase

    def _read_source(self, build: dict[str, Any]) -> bool:
        variables = self._builds[build["id"]]["variables"]
        try:
            body = (
                self.client("s3")
                .get_object(Bucket=variables["CONTEXT_BUCKET"], Key=variables["CONTEXT_KEY"])[
                    "Body"
                ]
                .read()
            )
            with tarfile.open(fileobj=io.BytesIO(body)) as tar:
                member = tar.extractfile(DOCKERFILE)
                text = member.read().decode() if member else ""
        except Exception as error:  # what the buildspec's `aws s3 cp | tar -x` would say
            self._log(build, [f"[Container] reading the context failed: {error}"])
            self._end(build, "FAILED", "DOWNLOAD_SOURCE")
            return False
        if hashlib.sha256(body).hexdigest() != variables.get("IMAGE_TAG"):
            # the buildspec's `sha256sum -c`: the tar is not what its hash (the tag) says
            self._log(
                build,
                [
                    "context.tar: FAILED",
                    "sha256sum: WARNING: 1 computed checksum did NOT match",
                ],
            )
            self._end(build, "FAILED", "PRE_BUILD")
            return False
        steps = dockerfile_steps(text)
        self._builds[build["id"]].update(steps=steps, fails_at=failing_step(steps), size=len(body))
        self._log(build, [f"[Container] Entering phase BUILD ({len(steps)} steps)"])
        return True

    def _log_steps(self, build: dict[str, Any], share: float) -> None:
        state = self._builds[build["id"]]
        steps = state["steps"]
        due = max(1, min(len(steps), int(share * len(steps)) + 1))
        if state["fails_at"] is not None:
            due = min(due, state["fails_at"] + 1)
        lines = []
        for index in range(state["logged"], due):
            lines.append(f"Step {index + 1}/{len(steps)} : {steps[index]}")
            if index == state["fails_at"]:
                found = _INSTRUCTION.match(steps[index])
                command = found.group(2) if found else steps[index]
                lines.append(f" ---> Running in {build['id'][-12:]}")
                lines.append(f"The command '/bin/sh -c {command}' returned a non-zero code: 1")
        state["logged"] = due
        self._log(build, lines)

    def _push(self, build: dict[str, Any]) -> None:
        state = self._builds[build["id"]]
        variables = state["variables"]
        uri = variables.get("REPOSITORY_URI", "")
        repository = uri.partition("/")[2]
        tag = variables.get("IMAGE_TAG", "latest")
        image = SeededImage(repository, tag, state.get("size", 0) + BASE_IMAGE_BYTES)
        ecr = self.client("ecr")
        try:
            ecr.put_image(repositoryName=repository, imageManifest=manifest(image), imageTag=tag)
        except ecr.exceptions.ImageAlreadyExistsException:
            pass  # the same context built twice: the tag is there (immutable)
        except Exception as error:
            self._log(build, [f"[Container] docker push failed: {error}"])
            self._end(build, "FAILED", "POST_BUILD")
            return
        self._log(build, [f"{tag}: digest pushed to {uri}"])
        self._end(build, "SUCCEEDED", None)

    def _end(self, build: dict[str, Any], status: str, failed_phase: str | None) -> None:
        self._builds[build["id"]]["done"] = True
        build["buildStatus"] = status
        build["currentPhase"] = "COMPLETED"
        build["buildComplete"] = True
        phases = [{"phaseType": "SUBMITTED", "phaseStatus": "SUCCEEDED"}]
        for name, _ in PHASES:
            phases.append({"phaseType": name, "phaseStatus": "SUCCEEDED"})
            if name == failed_phase:
                phases[-1]["phaseStatus"] = "FAILED"
                break
        build["phases"] = phases
        self._log(build, [f"[Container] Phase complete: build status {status}"])

    def _log(self, build: dict[str, Any], lines: list[str]) -> None:
        if not lines:
            return
        now = int(time.time() * 1000)
        self.client("logs").put_log_events(
            logGroupName=build["logs"]["groupName"],
            logStreamName=build["logs"]["streamName"],
            logEvents=[{"timestamp": now, "message": line} for line in lines],
        )
