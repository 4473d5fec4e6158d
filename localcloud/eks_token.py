"""`python -m localcloud.eks_token --cluster-name NAME --region REGION [--profile P]`:
kubectl's exec credential plugin for the local cloud, the counterpart of `aws eks get-token`.
It prints an ExecCredential holding the EKS bearer token (an STS GetCallerIdentity request presigned
with the profile's credentials, `gpudev.cluster.eks.eks_bearer_token`, the token our
functions send), valid for 14 minutes as the AWS CLI says of its own (EKS accepts one for
15). The credentials come from the environment kubectl gives it (`.local/kubeconfig` names
the local credentials file; it passes the profile, which wins over keys in the environment, as
the AWS CLI's `--profile` does)."""

from __future__ import annotations

import argparse
import datetime
import json
import sys

VALID_MINUTES = 14


def exec_credential(token: str, now: datetime.datetime) -> dict[str, object]:
    expires = now + datetime.timedelta(minutes=VALID_MINUTES)
    return {
        "kind": "ExecCredential",
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "spec": {},
        "status": {
            "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "token": token,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcloud.eks_token", description=__doc__)
    parser.add_argument("--cluster-name", required=True)
    parser.add_argument("--region", required=True)
    parser.add_argument("--profile", help="a profile of the credentials file (default: the chain)")
    args = parser.parse_args(argv)
    import boto3
    import botocore.exceptions

    from gpudev.cluster.eks import eks_bearer_token

    try:
        session = boto3.Session(region_name=args.region, profile_name=args.profile)
        token = eks_bearer_token(session, args.cluster_name, args.region)
    except (RuntimeError, botocore.exceptions.BotoCoreError) as error:  # ProfileNotFound too
        print(f"cannot issue an EKS token: {error}", file=sys.stderr)
        return 1
    now = datetime.datetime.now(datetime.UTC)
    print(json.dumps(exec_credential(token, now)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
