"""What a local cloud is started with: its ports and the knobs tests and `make run` turn."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from localcloud.registry import LOCAL_ALLOWED_IMAGES
from localcloud.seed import DEFAULT_DESCRIPTION


@dataclass(frozen=True)
class Ports:
    api: int = 0
    aws: int = 0
    sqs: int = 0  # SQS has an endpoint of its own (localcloud/sqs_process.py)
    postgres: int = 0
    kubernetes: int = 0


@dataclass(frozen=True)
class Options:
    ports: Ports = Ports()
    database_url: str | None = None  # use this server instead of starting one
    tick_seconds: float | None = 10.0  # every schedule fires this often (None: real periods)
    kubelet_delay_seconds: float = 2.0  # bound pod -> Running
    # Running -> Ready: the pods' readiness probe (sshd answering) passes after this long.
    probe_seconds: float = 2.0
    # A deleted pod stays Terminating for its grace period times this (our pods: 10 s -> 2 s).
    termination_seconds_scale: float = 0.2
    # The reservation lifecycle's clock (LIFECYCLE_* settings): compress time for tests.
    seconds_per_hour: float = 3600.0
    # The state machines' retry waits' clock (None: seconds_per_hour). An outage measured in
    # real seconds (localcloud/fault_control.py) is ridden out by retries that count real
    # seconds too, as in AWS, while the rest of the lifecycle keeps the compressed clock.
    retry_seconds_per_hour: float | None = None
    ready_timeout_seconds: float = 600.0
    ready_poll_seconds: int = 2
    ready_watch_seconds: float = 10.0  # `Is the pod ready?` watches this long per call
    # New EBS snapshots stay `pending` this long on the lifecycle's clock (moto: at once).
    snapshot_seconds: float = 0.0
    cluster_description: Path = DEFAULT_DESCRIPTION
    # The dev pods' image (None: the settings' default, the public PyTorch image) and the
    # images whose PATH has jupyter-lab, as the pods' Jupyter check finds it (the public
    # PyTorch image has none; an image built from deploy/dev-image has it).
    pod_image: str | None = None
    jupyter_images: tuple[str, ...] = ()
    # `reserve --image`: the API's allowlist (gpudev:allowedImages; localcloud/registry.py
    # seeds moto's ECR), and how fast the stand-in's kubelet pulls (bytes per second on the
    # lifecycle's clock; None: at once).
    allowed_images: tuple[str, ...] = LOCAL_ALLOWED_IMAGES
    image_pull_bytes_per_second: float | None = None
    # `reserve --dockerfile`: how long a simulated CodeBuild build runs (real seconds;
    # localcloud/moto_codebuild.py).
    image_build_seconds: float = 3.0
    # `reserve --docker` (CDK context gpudev:allowDocker, off by default in a deployment):
    # allowed here, so `make run` shows it; tests of the refusal turn it off.
    allow_docker: bool = True
    # Images the registry does not have: their pulls fail as not found (image_pulls.py).
    missing_images: tuple[str, ...] = ()
    # The image pre-puller (docs/images.md): deploy/kubernetes/prepuller/ applied, and the
    # availability updater given the local tools image (registry.py TOOLS_IMAGE) to keep it.
    prepull: bool = False
    # Per-user limits (None: the settings' defaults, as a deployment without CDK context).
    max_live_reservations_per_user: int | None = None
    max_gpus_per_user: int | None = None
    # Each principal's request bucket (None: the settings' defaults, 120 a minute, 40 at once).
    api_requests_per_minute: int | None = None
    api_request_burst: int | None = None
    # The notifier's wait for a webhook's answer, per attempt (None: the settings' 5 s), and
    # how long the local webhook sink's `hang` hooks stay silent (docs/notifications.md).
    notify_webhook_timeout_seconds: float | None = None
    webhook_hang_seconds: float = 30.0
    # The API function's execution environments as this many OS processes of their own, as
    # Lambda runs them (localcloud/processes.py); 0: in this process, as every function.
    api_processes: int = 0
    # Every other function (the queue's consumer, the lifecycle's tasks, the schedules') in
    # up to this many processes each (a reserved concurrency lowers it); 0: in this process.
    # Processes copy the environment once, at the start: later changes do not reach them.
    function_processes: int = 0

    @property
    def retry_scale(self) -> float:
        """What the state machines' retry waits are scaled by (`compress_retries`)."""
        return (self.retry_seconds_per_hour or self.seconds_per_hour) / 3600
