"""Put a running local cloud (`make run`) through an outage, for as long as you say, then
end it. It finds the cloud through `.local/stack.json`:

    python -m localcloud.faults database-outage --seconds 60
    python -m localcloud.faults kubernetes-outage --seconds 300
    python -m localcloud.faults aws-throttle stepfunctions --seconds 120

The command blocks for the outage, printing the time left, and ends it before it exits
(also on Ctrl+C). The cloud ends it on its own timer as well, so nothing stays broken if
this command is killed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from localcloud.fault_control import KINDS, TOKEN_HEADER

STACK = Path(__file__).resolve().parent.parent / ".local" / "stack.json"
PROGRESS_SECONDS = 10.0


class ToolError(Exception):
    pass


def _control(stack: dict[str, Any], method: str, body: dict[str, Any] | None = None) -> Any:
    url = stack.get("fault_control_url")
    if not url:
        raise ToolError("this stack.json names no fault control: restart `make run`")
    request = urllib.request.Request(
        f"{url}/faults",
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={TOKEN_HEADER: stack.get("fault_control_token") or ""},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as error:
        raise ToolError(json.loads(error.read() or b"{}").get("message", str(error))) from error
    except OSError as error:
        raise ToolError(
            f"the local cloud does not answer at {url}: is `make run` running?"
        ) from error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localcloud.faults", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("fault", choices=KINDS)
    parser.add_argument("service", nargs="?", help="aws-throttle: e.g. stepfunctions, ec2, sts")
    parser.add_argument("--seconds", type=float, required=True, help="how long the outage lasts")
    parser.add_argument("--stack", type=Path, default=STACK, help="the local cloud's stack.json")
    args = parser.parse_args(argv)
    if (args.fault == "aws-throttle") != (args.service is not None):
        parser.error("a SERVICE goes with aws-throttle, and with it only")
    try:
        stack = json.loads(args.stack.read_text())
    except OSError:
        print(f"error: no local cloud described at {args.stack}: start `make run`", file=sys.stderr)
        return 2
    what = f"{args.fault} {args.service}" if args.service else args.fault
    try:
        _control(
            stack, "POST", {"fault": args.fault, "seconds": args.seconds, "service": args.service}
        )
        ends = time.monotonic() + args.seconds
        try:  # from here on, Ctrl+C ends the outage: even during the first line
            print(f"{what}: {args.seconds:g} s", flush=True)
            while (left := ends - time.monotonic()) > 0:
                time.sleep(min(left, PROGRESS_SECONDS))
                if ends - time.monotonic() > 0:
                    print(f"{what}: {ends - time.monotonic():.0f} s left", flush=True)
        except KeyboardInterrupt:
            print(f"{what}: interrupted", flush=True)
        finally:
            _control(stack, "DELETE")
    except ToolError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"{what}: ended", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
