"""`make run`: start the local cloud and keep it up until Ctrl+C.

Runs PostgreSQL (migrations applied), moto (AWS APIs with the deployment rendered onto it,
the local IAM users alice and bob, and the SSO-style user carol), the SQS pollers and schedule
ticker, the Kubernetes stand-in with its simulated cluster, and the API gateway that verifies
SigV4 and runs our API function in-process (or, with `--api-processes N`, in up to N
processes of its own, as Lambda runs its execution environments; `--function-processes M`
does the same for every other function). What it started is
written to `.local/stack.json`. Every start is clean: the embedded PostgreSQL's database is
made anew, as moto's AWS and the cluster are (they live in memory), and a database given by
DATABASE_URL that holds reservations or disks is refused (localcloud/earlier_run.py).

Ctrl+C (or SIGTERM) stops everything within STOP_BUDGET_SECONDS (see LocalCloud.stop); if
the stop itself hangs, a watchdog prints every thread's stack, ends PostgreSQL and exits
after EXIT_DEADLINE_SECONDS, and so does a second Ctrl+C at once. Handler threads abandoned
by the stop are not waited for: the process exits with `os._exit` once the stop is done.
"""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

import psycopg

from localcloud.earlier_run import EarlierRun, refuse_earlier_run
from localcloud.options import Ports
from localcloud.postgres import PostgresError
from localcloud.sqs_process import SqsProcessError
from localcloud.stack import LocalCloud, Options
from localcloud.stop_sequence import STOP_BUDGET_SECONDS

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".local"
EXIT_DEADLINE_SECONDS = 9.5  # from Ctrl+C to the process gone, whatever hangs


def _exit_now(code: int) -> None:
    """Leave without waiting for anything: abandoned threads, atexit, interpreter teardown."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def _abandon(cloud: LocalCloud, why: str) -> None:
    print(f"{why}: ending PostgreSQL and exiting now; every thread's stack:", file=sys.stderr)
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    cloud.stop_postgres_now()
    _exit_now(1)


def clock_line(seconds_per_hour: float) -> str:
    """The banner's statement of the one clock unit on screen."""
    if seconds_per_hour == 3600:
        return "real time: an hour lasts an hour"
    return (
        f"COMPRESSED: a clock hour lasts {seconds_per_hour:g} s (a clock minute "
        f"{seconds_per_hour / 60:g} s); hours, waits, ETAs and 'expires in' on screen are "
        "clock minutes/hours, timestamps are wall-clock UTC"
    )


def state_line(cloud: LocalCloud) -> str:
    """The banner's statement of what this start kept: nothing."""
    if cloud.options.database_url:
        return (
            "NEW: AWS (moto) and the cluster start empty; the database is DATABASE_URL's,"
            " checked to hold no reservation or disk of an earlier run"
        )
    return (
        "NEW: every start is clean (database, AWS (moto) and cluster alike); nothing of an"
        " earlier run is kept"
    )


def shown_path(path: Path) -> str:
    """`path` relative to the working directory when it lies below it (`.local/kubeconfig`
    under `make run`), else absolute."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def banner(cloud: LocalCloud, state: Path) -> str:
    stack = cloud.describe()
    return f"""
gpu-dev local cloud is up
  clock                     {clock_line(cloud.options.seconds_per_hour)}
  API (SigV4, execute-api)  {stack["api_url"]}
  AWS (moto)                {stack["aws_endpoint_url"]}   region {stack["region"]}
  SQS (moto, own process)   {stack["sqs_endpoint_url"]}
  Kubernetes (stand-in)     {stack["kubernetes_url"]}   EKS cluster {stack["eks_cluster_name"]}
  PostgreSQL                {stack["database_url"]}
  credentials               {stack["credentials_file"]}   profiles: {", ".join(stack["profiles"])}
  description               {state / "stack.json"}
  state                     {state_line(cloud)}

Try it from another terminal:
  export AWS_SHARED_CREDENTIALS_FILE={stack["credentials_file"]}
  curl -s {stack["api_url"]}/health
  .venv/bin/python -m localcloud.call --profile alice GET /v1/me
  .venv/bin/python -m localcloud.call --profile carol GET /v1/me     # an SSO session
  .venv/bin/python -m localcloud.call --unsigned GET /v1/me     # 403, like API Gateway

kubectl, as against EKS (HTTPS with the cluster's CA, an EKS token as carol):
  KUBECONFIG={shown_path(Path(stack["kubeconfig"]))} kubectl get nodes -o wide

The gpu-dev CLI (carol is the local operator, for `gpu-dev admin`):
  alias gpu-dev=".venv/bin/gpu-dev --api-url {stack["api_url"]} --region {stack["region"]}"
  gpu-dev config set github_user YOUR_GITHUB_NAME     # whose SSH keys open your pods
  gpu-dev avail --profile alice

Ctrl+C stops everything.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcloud", description=__doc__)
    parser.add_argument("--api-port", type=int, default=8000)
    parser.add_argument("--aws-port", type=int, default=5000)
    parser.add_argument("--sqs-port", type=int, default=5001)
    parser.add_argument("--postgres-port", type=int, default=0, help="default: a free port")
    parser.add_argument("--kubernetes-port", type=int, default=6443)
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=STATE,
        help="PostgreSQL data, credentials and stack.json (default: .local in the project)",
    )
    parser.add_argument(
        "--tick-seconds",
        type=float,
        default=10.0,
        help="fire every schedule this often (0 or less: their real rate)",
    )
    parser.add_argument(
        "--seconds-per-hour",
        type=float,
        default=3600.0,
        help="the reservation lifecycle's clock: how long an hour lasts (e.g. 60)",
    )
    parser.add_argument(
        "--snapshot-seconds",
        type=float,
        default=0.0,
        help="EBS snapshots stay pending this long on the lifecycle's clock (default 0: "
        "complete at once, as moto does; AWS takes minutes, e.g. 600)",
    )
    parser.add_argument(
        "--dev-image",
        metavar="IMAGE",
        help="start pods from IMAGE and take it as built from deploy/dev-image (it has "
        "jupyter-lab); default: the public PyTorch image, which has no Jupyter, so a "
        "reservation's Jupyter says why it is unavailable",
    )
    parser.add_argument(
        "--image-pull-mb-per-second",
        type=float,
        default=None,
        metavar="MB",
        help="the kubelet pulls images at MB megabytes a second of the lifecycle's clock, so "
        "a cold node's start waits for its image's size (docs/images.md); default: at once",
    )
    parser.add_argument(
        "--missing-image",
        metavar="IMAGE",
        action="append",
        default=[],
        help="the registry has no IMAGE (repeatable): its pulls fail as containerd's NotFound "
        "(ErrImagePull, then ImagePullBackOff), so a reservation that starts it fails; with "
        "--dev-image IMAGE, every reservation does",
    )
    parser.add_argument(
        "--prepull",
        action="store_true",
        help="run the image pre-puller (deploy/kubernetes/prepuller/): the GPU nodes pull the "
        "default image and the most used ones before a reservation asks (docs/images.md)",
    )
    parser.add_argument(
        "--api-processes",
        type=int,
        default=0,
        metavar="N",
        help="run the API function in up to N execution environments of their own (OS "
        "processes, one request at a time each, as Lambda does) instead of in this process",
    )
    parser.add_argument(
        "--function-processes",
        type=int,
        default=0,
        metavar="M",
        help="run every other function (the queue's consumer, the lifecycle's tasks, the "
        "schedules') in up to M execution environments of their own each (a reserved "
        "concurrency lowers M, as in Lambda)",
    )
    args = parser.parse_args(argv)
    for flag in ("api_processes", "function_processes"):
        if getattr(args, flag) < 0:
            parser.error(f"--{flag.replace('_', '-')}: 0 (in this process) or more")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)-20s %(message)s")

    state = args.state_dir.resolve()
    stop = threading.Event()
    cloud: LocalCloud | None = None

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if stop.is_set() and cloud is not None:  # a second Ctrl+C: do not wait for the stop
            _abandon(cloud, "interrupted again while stopping")
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    ports = Ports(
        api=args.api_port,
        aws=args.aws_port,
        sqs=args.sqs_port,
        postgres=args.postgres_port,
        kubernetes=args.kubernetes_port,
    )
    tick = args.tick_seconds if args.tick_seconds > 0 else None
    # DATABASE_URL: use that PostgreSQL instead of the embedded one (as the test suite does).
    database_url = os.environ.get("DATABASE_URL") or None
    options = Options(
        ports=ports,
        tick_seconds=tick,
        database_url=database_url,
        seconds_per_hour=args.seconds_per_hour,
        snapshot_seconds=args.snapshot_seconds,
        pod_image=args.dev_image,
        jupyter_images=(args.dev_image,) if args.dev_image else (),
        image_pull_bytes_per_second=(
            args.image_pull_mb_per_second * 1e6 if args.image_pull_mb_per_second else None
        ),
        missing_images=tuple(args.missing_image),
        prepull=args.prepull,
        api_processes=args.api_processes,
        function_processes=args.function_processes,
    )
    failures: list[str] = []

    def on_failure(message: str) -> None:
        failures.append(message)
        stop.set()

    cloud = LocalCloud(state, options, on_failure=on_failure)
    try:
        if database_url is not None:
            refuse_earlier_run(database_url)
        cloud.start()
    except (PostgresError, OSError, SqsProcessError, EarlierRun, psycopg.Error) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        cloud.write_kubeconfig()  # before stack.json, which tells waiting tools we are up
        cloud.write_description()
        print(banner(cloud, state), flush=True)
        stop.wait()
        for failure in failures:
            print(f"error: {failure}", file=sys.stderr, flush=True)
        print("stopping...", flush=True)
    finally:
        (state / "stack.json").unlink(missing_ok=True)
        cloud.kubeconfig_file.unlink(missing_ok=True)  # its CA and endpoint end with this run
        watchdog = threading.Timer(
            EXIT_DEADLINE_SECONDS, _abandon, (cloud, f"not stopped after {EXIT_DEADLINE_SECONDS} s")
        )
        watchdog.daemon = True
        watchdog.start()
        began = time.monotonic()
        try:
            cloud.stop(STOP_BUDGET_SECONDS)
        except Exception:
            logging.getLogger("localcloud.stop").exception("stopping failed")
            return 1
        finally:
            watchdog.cancel()
            print(f"stopped in {time.monotonic() - began:.2f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    _exit_now(main())
