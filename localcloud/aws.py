"""AWS on this machine: a moto server on 127.0.0.1, seeded with the local users.

Two IAM users (alice, bob) with long-term keys, and one IAM Identity Center (SSO) user,
carol, as most engineers sign in to AWS: a session of the permission set's role
`AWSReservedSSO_GpuDevUsers_<hex>` named by her login, with temporary credentials. Their
keys are written to an AWS shared-credentials file (one profile each) so the CLI and botocore
use them through the standard credential chain. The gateway reads secrets from moto's IAM and
STS backends in this process: AWS never returns a secret after creation, and neither does
moto over its API.
"""

from __future__ import annotations

import configparser
import contextlib
import json
import logging
import threading
import urllib.request
from datetime import UTC
from pathlib import Path
from typing import Any

import boto3
from moto.iam.models import iam_backends
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.sts.models import sts_backends
from werkzeug.serving import BaseWSGIServer, make_server

from localcloud.aws_throttles import AwsThrottles
from localcloud.deadline import Deadline, join_or_abandon
from localcloud.http import POLL_SECONDS
from localcloud.lambdas import ACCOUNT_ID
from localcloud.sigv4 import SigningKey

LOCAL_USERS = ("alice", "bob")

# The SSO user. Identity Center names a permission set's role AWSReservedSSO_<set>_<16 hex>
# under this path, trusts its account's SAML provider, and names each session after the
# user's login; our username is that session name.
SSO_PROFILE = "carol"
SSO_SESSION_NAME = "carol@example.com"
SSO_ROLE_NAME = "AWSReservedSSO_GpuDevUsers_5f2c4e8a9b3d1c07"
SSO_ROLE_PATH = "/aws-reserved/sso.amazonaws.com/"
SSO_SAML_PROVIDER = "AWSSSO_8d3e1f4b7a2c6e90_DO_NOT_DELETE"
SSO_SESSION_SECONDS = 12 * 3600  # the longest session a permission set allows
PROFILES = (*LOCAL_USERS, SSO_PROFILE)


def sso_trust_policy(account_id: str) -> str:
    """The trust policy Identity Center gives a permission set's role."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {
                        "Federated": f"arn:aws:iam::{account_id}:saml-provider/{SSO_SAML_PROVIDER}"
                    },
                    "Action": ["sts:AssumeRoleWithSAML", "sts:TagSession"],
                    "Condition": {
                        "StringEquals": {"SAML:aud": "https://signin.aws.amazon.com/saml"}
                    },
                }
            ],
        }
    )


class LocalAws:
    """moto's server app on werkzeug's threaded server, as `moto.server.ThreadedMotoServer`
    builds it, but bound in the caller's thread (a busy port raises here, where
    ThreadedMotoServer's `start` would wait forever for a server that never came up) and
    closed on stop (ThreadedMotoServer leaves its listening socket open)."""

    def __init__(self, region: str, port: int = 0, service: str | None = None):
        self.region = region
        self._port = port
        self._service = service  # only this service's app (None: moto's dispatcher, all)
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        # Services served elsewhere, by endpoint (SQS: localcloud/sqs_process.py).
        self.service_endpoints: dict[str, str] = {}
        self.throttles = AwsThrottles()  # python -m localcloud.faults aws-throttle SERVICE
        self._admin: boto3.Session | None = None
        self._admin_lock = threading.Lock()
        logging.getLogger("werkzeug").setLevel(logging.WARNING)

    @property
    def endpoint_url(self) -> str:
        assert self._server is not None, "start() first"
        return f"http://{self._server.host}:{self._server.port}"

    def start(self) -> LocalAws:
        # werkzeug binds with SO_REUSEADDR: a restart is not refused by TIME_WAIT connections.
        self._server = make_server(
            "127.0.0.1",
            self._port,
            self.throttles.wrap(
                create_backend_app(self._service)  # type: ignore[arg-type]
                if self._service
                else DomainDispatcherApplication(create_backend_app)
            ),
            threaded=True,  # request threads are daemon threads: never joined
            request_handler=MotoRequestHandler,
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": POLL_SECONDS},
            name="moto-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self, deadline: Deadline | None = None) -> None:
        deadline = deadline or Deadline.after(5.0)
        if self._thread is None:
            return
        # moto's backends are process-global: forget everything (moto's documented reset
        # endpoint), so a later cloud in this process starts empty. Bounded: a reset that
        # cannot finish in time is given up (the process is exiting anyway).
        reset = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(reset, timeout=deadline.remaining(at_least=0.5)),
        ):
            pass
        assert self._server is not None
        self._server.shutdown()  # returns within one poll interval
        self._server.server_close()
        thread, self._thread = self._thread, None
        join_or_abandon([thread], deadline)

    def enable_state_machine_execution(self) -> None:
        # moto's ASL interpreter is off by default; the server shares this process's config.
        from moto.core.config import default_user_config

        default_user_config["stepfunctions"]["execute_state_machine"] = True

    def admin_session(self) -> boto3.Session:
        """Credentials for seeding; moto accepts any key when it does not enforce auth.
        One session for the cloud's life: each new one reads botocore's endpoint and
        service models from disk again (a cloud's start made 25 clients, 1.9 s of CPU)."""
        with self._admin_lock:
            if self._admin is None:
                self._admin = boto3.Session(
                    aws_access_key_id="AKIALOCALADMIN000000",
                    aws_secret_access_key="local-admin-secret",
                    region_name=self.region,
                )
            return self._admin

    def client(self, service: str) -> Any:
        session = self.admin_session()
        with self._admin_lock:  # a boto3 session is not thread-safe while it makes clients
            return session.client(
                service,  # type: ignore[call-overload]
                endpoint_url=self.service_endpoints.get(service, self.endpoint_url),
            )

    def create_function_identity(self) -> tuple[str, str]:
        """The credentials our in-process functions use (their "execution role")."""
        iam = self.client("iam")
        iam.create_user(UserName=FUNCTIONS_USER)
        key = iam.create_access_key(UserName=FUNCTIONS_USER)["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]

    def create_users(self, credentials_file: Path) -> dict[str, str]:
        """Create the local users and write their keys as profiles; return their principal
        ARNs by profile."""
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
        arns[SSO_PROFILE], config[SSO_PROFILE] = self._sign_in_sso_user()
        credentials_file.parent.mkdir(parents=True, exist_ok=True)
        with credentials_file.open("w") as out:
            config.write(out)
        credentials_file.chmod(0o600)
        return arns

    def _sign_in_sso_user(self) -> tuple[str, dict[str, str]]:
        """The permission set's role and a session of it for carol, as the SSO portal hands
        out. In AWS the portal calls AssumeRoleWithSAML; moto does not check trust
        policies, so the admin session assumes the role directly."""
        iam = self.client("iam")
        role = iam.create_role(
            RoleName=SSO_ROLE_NAME,
            Path=SSO_ROLE_PATH,
            AssumeRolePolicyDocument=sso_trust_policy(ACCOUNT_ID),
            MaxSessionDuration=SSO_SESSION_SECONDS,
        )["Role"]
        session = self.client("sts").assume_role(
            RoleArn=role["Arn"],
            RoleSessionName=SSO_SESSION_NAME,
            DurationSeconds=SSO_SESSION_SECONDS,
        )
        credentials = session["Credentials"]
        return session["AssumedRoleUser"]["Arn"], {
            "aws_access_key_id": credentials["AccessKeyId"],
            "aws_secret_access_key": credentials["SecretAccessKey"],
            "aws_session_token": credentials["SessionToken"],
            "region": self.region,
        }


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
                    expires_at=role.expiration.replace(tzinfo=UTC),  # moto's is naive UTC
                )
    return None
