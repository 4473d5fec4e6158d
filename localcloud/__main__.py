"""`make run`: start the local cloud and keep it up until Ctrl+C.

Runs PostgreSQL (migrations applied), moto (AWS APIs with the deployment rendered onto it,
the local IAM users alice and bob, and the SSO-style user carol), the SQS pollers and schedule
ticker, the Kubernetes stand-in with its simulated cluster, and the API gateway that verifies
SigV4 and runs our API function in-process. What it started is written to `.local/stack.json`.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from localcloud.postgres import PostgresError
from localcloud.stack import LocalCloud, Options, Ports

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".local"


def banner(cloud: LocalCloud) -> str:
    stack = cloud.describe()
    return f"""
gpu-dev local cloud is up
  API (SigV4, execute-api)  {stack["api_url"]}
  AWS (moto)                {stack["aws_endpoint_url"]}   region {stack["region"]}
  Kubernetes (stand-in)     {stack["kubernetes_url"]}   EKS cluster {stack["eks_cluster_name"]}
  PostgreSQL                {stack["database_url"]}
  credentials               {stack["credentials_file"]}   profiles: {", ".join(stack["profiles"])}
  description               {STATE / "stack.json"}

Try it from another terminal:
  export AWS_SHARED_CREDENTIALS_FILE={stack["credentials_file"]}
  curl -s {stack["api_url"]}/health
  .venv/bin/python -m localcloud.call --profile alice GET /v1/me
  .venv/bin/python -m localcloud.call --profile carol GET /v1/me     # an SSO session
  .venv/bin/python -m localcloud.call --unsigned GET /v1/me     # 403, like API Gateway

Ctrl+C stops everything.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcloud", description=__doc__)
    parser.add_argument("--api-port", type=int, default=8000)
    parser.add_argument("--aws-port", type=int, default=5000)
    parser.add_argument("--postgres-port", type=int, default=0, help="default: a free port")
    parser.add_argument("--kubernetes-port", type=int, default=6443)
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
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)-20s %(message)s")

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    ports = Ports(
        api=args.api_port,
        aws=args.aws_port,
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
    )
    cloud = LocalCloud(STATE, options)
    try:
        cloud.start()
    except (PostgresError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    try:
        cloud.write_description()
        print(banner(cloud), flush=True)
        stop.wait()
        print("stopping...", flush=True)
    finally:
        (STATE / "stack.json").unlink(missing_ok=True)
        cloud.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
