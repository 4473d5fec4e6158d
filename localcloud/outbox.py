"""What the local cloud's notifier sent: every e-mail (moto's SES) and Slack post (the local
webhook sink), with its recipient, subject or text, reservation id and event. It finds the
cloud through `.local/stack.json`:

    python -m localcloud.outbox               # a table, one line per message
    python -m localcloud.outbox --json        # the messages in full, for scripts and tests
    python -m localcloud.outbox verify ADDR   # what SES's verification link does for ADDR
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

STACK = Path(__file__).resolve().parent.parent / ".local" / "stack.json"


class ToolError(Exception):
    pass


def sink_url(stack_file: Path) -> str:
    try:
        stack = json.loads(stack_file.read_text())
    except OSError:
        raise ToolError(f"no local cloud described at {stack_file}: start `make run`") from None
    url = stack.get("notification_sink_url")
    if not url:
        raise ToolError("this stack.json names no notification sink: restart `make run`")
    return str(url)


def call(url: str, method: str = "GET", body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return json.loads(error.read() or b"{}")
    except OSError:
        raise ToolError(
            f"the local cloud does not answer at {url}: is `make run` running?"
        ) from None


def sent(url: str) -> list[dict[str, Any]]:
    return list(call(f"{url}/outbox")["sent"])


def table(messages: list[dict[str, Any]]) -> str:
    if not messages:
        return "nothing sent yet"
    lines = [f"{'CHANNEL':7}  {'EVENT':9}  {'RESERVATION':36}  {'RECIPIENT':32}  SUBJECT/TEXT"]
    for m in messages:
        headline = m["subject"] or m["text"].split("\n", 1)[0]
        lines.append(
            f"{m['channel']:7}  {m['event'] or '-':9}  {m['reservation_id'] or '-':36}  "
            f"{m['recipient'][:32]:32}  {headline}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localcloud.outbox", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("command", nargs="?", choices=("list", "verify"), default="list")
    parser.add_argument("address", nargs="?", help="verify: the e-mail address")
    parser.add_argument("--json", action="store_true", help="the messages as JSON")
    parser.add_argument("--stack", type=Path, default=STACK, help="the local cloud's stack.json")
    args = parser.parse_args(argv)
    if (args.command == "verify") != (args.address is not None):
        parser.error("an ADDRESS goes with verify, and with it only")
    try:
        url = sink_url(args.stack)
        if args.command == "verify":
            answer = call(f"{url}/verify", "POST", {"address": args.address})
            if not answer.get("verified"):
                print(
                    f"error: SES has no identity {args.address!r}: save it first "
                    "(gpu-dev config notify --email)",
                    file=sys.stderr,
                )
                return 1
            print(f"{args.address} verified")
            return 0
        messages = sent(url)
    except ToolError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(messages, indent=2) if args.json else table(messages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
