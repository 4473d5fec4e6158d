"""AWS on this machine: a moto server on 127.0.0.1, seeded with the local IAM users.

The local users' keys are written to an AWS shared-credentials file (one profile per user)
so the CLI and botocore use them through the standard credential chain. The gateway reads
secrets from moto's IAM and STS backends in this process: AWS never returns a secret after
creation, and neither does moto over its API.
"""

from __future__ import annotations

import configparser
import contextlib
import logging
import urllib.request
from pathlib import Path
from typing import Any

import boto3
from moto.iam.models import iam_backends
from moto.server import ThreadedMotoServer
from moto.sts.models import sts_backends

from localcloud.lambdas import ACCOUNT_ID
from localcloud.sigv4 import SigningKey

LOCAL_USERS = ("alice", "bob")


class LocalAws:
    def __init__(self, region: str, port: int = 0):
        self.region = region
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        logging.getLogger("werkzeug").setLevel(logging.WARNING)

    @property
    def endpoint_url(self) -> str:
        host, port = self._server.get_host_and_port()
        return f"http://{host}:{port}"

    def start(self) -> LocalAws:
        self._server.start()
        return self

    def stop(self) -> None:
        # moto's backends are process-global: forget everything (moto's documented reset
        # endpoint), so a later cloud in this process starts empty.
        reset = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")
        with contextlib.suppress(OSError), urllib.request.urlopen(reset, timeout=10):
            pass
        self._server.stop()

    def enable_state_machine_execution(self) -> None:
        # moto's ASL interpreter is off by default; the server shares this process's config.
        from moto.core.config import default_user_config

        default_user_config["stepfunctions"]["execute_state_machine"] = True

    def admin_session(self) -> boto3.Session:
        """Credentials for seeding; moto accepts any key when it does not enforce auth."""
        return boto3.Session(
            aws_access_key_id="AKIALOCALADMIN000000",
            aws_secret_access_key="local-admin-secret",
            region_name=self.region,
        )

    def client(self, service: str) -> Any:
        return self.admin_session().client(
            service,  # type: ignore[call-overload]
            endpoint_url=self.endpoint_url,
        )

    def create_function_identity(self) -> tuple[str, str]:
        """The credentials our in-process functions use (their "execution role")."""
        iam = self.client("iam")
        iam.create_user(UserName=FUNCTIONS_USER)
        key = iam.create_access_key(UserName=FUNCTIONS_USER)["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]

    def create_users(self, credentials_file: Path) -> dict[str, str]:
        """Create the local IAM users and write their keys as profiles; return user ARNs."""
        iam = self.client("iam")
        config = configparser.ConfigParser()
        arns = {}
        for name in LOCAL_USERS:
            arns[name] = iam.create_user(UserName=name)["User"]["Arn"]
            key = iam.create_access_key(UserName=name)["AccessKey"]
            config[name] = {
                "aws_access_key_id": key["AccessKeyId"],
                "aws_secret_access_key": key["SecretAccessKey"],
                "region": self.region,
            }
        credentials_file.parent.mkdir(parents=True, exist_ok=True)
        with credentials_file.open("w") as out:
            config.write(out)
        credentials_file.chmod(0o600)
        return arns


FUNCTIONS_USER = "gpudev-functions"


def signing_key(access_key_id: str) -> SigningKey | None:
    """The local principal owning `access_key_id`: an IAM user's key or an STS session's."""
    iam = iam_backends[ACCOUNT_ID]["global"]
    for user in iam.users.values():
        for key in user.access_keys:
            if key.access_key_id == access_key_id and key.status == "Active":
                return SigningKey(
                    access_key_id, key.secret_access_key, user.arn, ACCOUNT_ID, user.id
                )
    # Sessions of every account: moto's AssumeRole into a role ARN of another account gives
    # that account's credentials (tests sign as principals of other accounts this way).
    for account_id in list(sts_backends):
        for role in sts_backends[account_id]["global"].assumed_roles:
            if role.access_key_id == access_key_id:
                return SigningKey(
                    access_key_id,
                    role.secret_access_key,
                    role.arn,
                    role.account_id,
                    role.user_id,
                    session_token=role.session_token,
                )
    return None
