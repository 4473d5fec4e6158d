"""Send one request to the local API with the `gpu-dev` CLI's client (gpudev_cli.client):
signed with the standard credential chain as `--profile`, or not at all.

python -m localcloud.call --profile alice GET /v1/me
python -m localcloud.call --unsigned GET /v1/me
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpudev_cli.client import CliError, SigV4Client, session_for

STACK = Path(__file__).resolve().parent.parent / ".local" / "stack.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcloud.call")
    parser.add_argument("method")
    parser.add_argument("path")
    parser.add_argument("--profile", default=None)
    parser.add_argument("--unsigned", action="store_true")
    parser.add_argument("--data", default=None, help="JSON body")
    parser.add_argument("--stack", type=Path, default=STACK, help="the local cloud's stack.json")
    args = parser.parse_args(argv)

    stack = json.loads(args.stack.read_text())
    body = json.loads(args.data) if args.data else None
    try:
        client = SigV4Client(stack["api_url"], session_for(args.profile, stack["region"]))
        reply = client.call(args.method, args.path, body, signed=not args.unsigned)
    except CliError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(reply.status, json.dumps(reply.body))
    return 0 if reply.status < 400 else 1


if __name__ == "__main__":
    sys.exit(main())
