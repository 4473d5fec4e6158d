"""Send one request to the local API, signed with botocore's SigV4 like the CLI will.

python -m localcloud.call --profile alice GET /v1/me
python -m localcloud.call --unsigned GET /v1/me
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

STACK = Path(__file__).resolve().parent.parent / ".local" / "stack.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcloud.call")
    parser.add_argument("method")
    parser.add_argument("path")
    parser.add_argument("--profile", default=None)
    parser.add_argument("--unsigned", action="store_true")
    parser.add_argument("--data", default=None, help="JSON body")
    args = parser.parse_args(argv)

    stack = json.loads(STACK.read_text())
    url = stack["api_url"] + args.path
    body = args.data.encode() if args.data else None
    request = AWSRequest(
        method=args.method, url=url, data=body, headers={"Content-Type": "application/json"}
    )
    if not args.unsigned:
        session = boto3.Session(profile_name=args.profile, region_name=stack["region"])
        credentials = session.get_credentials()
        if credentials is None:
            print("no AWS credentials found (set AWS_SHARED_CREDENTIALS_FILE)", file=sys.stderr)
            return 2
        SigV4Auth(credentials.get_frozen_credentials(), "execute-api", stack["region"]).add_auth(
            request
        )
    prepared = request.prepare()
    http_request = urllib.request.Request(
        prepared.url, data=body, method=args.method, headers=dict(prepared.headers.items())
    )
    try:
        with urllib.request.urlopen(http_request) as response:
            print(response.status, response.read().decode())
            return 0
    except urllib.error.HTTPError as error:
        print(error.code, error.read().decode())
        return 1


if __name__ == "__main__":
    sys.exit(main())
