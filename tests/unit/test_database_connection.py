from __future__ import annotations

import json

import pytest
from psycopg.conninfo import conninfo_to_dict

from gpudev.aws import AwsClients
from gpudev.db.pool import connect_kwargs, conninfo, iam_auth_token
from gpudev.settings import DatabaseSettings


def test_database_url_is_used_as_is():
    settings = DatabaseSettings(database_url="postgresql://u@h:1/d")
    assert conninfo(settings) == "postgresql://u@h:1/d"


def test_aurora_secret_becomes_a_verified_tls_connection_string():
    secret = {
        "host": "db.cluster-x.rds.amazonaws.com",
        "port": 5432,
        "username": "gpudev",
        "password": "p@ss word",
        "dbname": "gpudev",
    }
    seen: list[str] = []

    def read_secret(arn: str) -> str:
        seen.append(arn)
        return json.dumps(secret)

    settings = DatabaseSettings(
        database_url=None, db_secret_arn="arn:aws:secretsmanager:us-east-2:1:secret:db"
    )
    params = conninfo_to_dict(conninfo(settings, secret_reader=read_secret))
    assert seen == ["arn:aws:secretsmanager:us-east-2:1:secret:db"]
    assert params == {
        "host": "db.cluster-x.rds.amazonaws.com",
        "port": "5432",
        "user": "gpudev",
        "password": "p@ss word",
        "dbname": "gpudev",
        "sslmode": "verify-full",
        "sslrootcert": "/opt/certs/rds-global-bundle.pem",
    }


def _iam_settings(**overrides: object) -> DatabaseSettings:
    values: dict[str, object] = {
        "database_url": None,
        "db_secret_arn": None,
        "db_host": "db.cluster-x.us-east-2.rds.amazonaws.com",
        "db_iam_user": "gpudev_api_login",
        **overrides,
    }
    return DatabaseSettings(**values)  # type: ignore[arg-type]


def test_in_aws_a_function_logs_in_as_its_login_role_over_tls_verified_by_the_layers_ca():
    params = conninfo_to_dict(conninfo(_iam_settings()))
    assert params == {
        "host": "db.cluster-x.us-east-2.rds.amazonaws.com",
        "port": "5432",
        "user": "gpudev_api_login",
        "dbname": "gpudev",
        "sslmode": "verify-full",
        # the layer is mounted at /opt; layer_bundling puts the bundle in certs/
        "sslrootcert": "/opt/certs/rds-global-bundle.pem",
    }
    assert "password" not in params  # a fresh IAM token per connection, as a kwarg


def test_every_new_connection_gets_a_fresh_token_and_the_timeouts_in_its_startup_options():
    tokens = iter(["token-1", "token-2"])
    settings = _iam_settings(db_statement_timeout_ms=10_000, db_lock_timeout_ms=3_000)

    first = connect_kwargs(settings, token_factory=lambda s: next(tokens))
    second = connect_kwargs(settings, token_factory=lambda s: next(tokens))

    assert (first["password"], second["password"]) == ("token-1", "token-2")
    assert first["options"] == "-c statement_timeout=10000 -c lock_timeout=3000"
    assert first["connect_timeout"] == 5


def test_a_database_url_gets_the_timeouts_but_no_token():
    kwargs = connect_kwargs(
        DatabaseSettings(database_url="postgresql://u@h:1/d", db_statement_timeout_ms=0),
        token_factory=lambda s: pytest.fail("no token for a URL"),
    )
    assert "password" not in kwargs
    assert kwargs["options"] == "-c statement_timeout=0 -c lock_timeout=3000"


def test_each_connection_names_its_function_when_told_and_none_otherwise():
    named = DatabaseSettings(database_url="postgresql://u@h:1/d", db_application_name="gpudev-api")
    assert connect_kwargs(named)["application_name"] == "gpudev-api"
    unnamed = DatabaseSettings(database_url="postgresql://u@h:1/d")
    assert "application_name" not in connect_kwargs(unnamed)


def test_an_application_name_longer_than_postgresql_keeps_is_refused():
    with pytest.raises(ValueError, match="63"):
        DatabaseSettings(database_url="postgresql://u@h:1/d", db_application_name="x" * 64)


def test_the_iam_token_is_signed_by_botocore_for_the_login_role_without_a_request():
    import boto3

    session = boto3.Session(
        aws_access_key_id="AKIAEXAMPLE", aws_secret_access_key="secret", region_name="us-east-2"
    )
    token = iam_auth_token(_iam_settings(), AwsClients(session, region="us-east-2"))
    assert token.startswith("db.cluster-x.us-east-2.rds.amazonaws.com:5432/?")
    assert "Action=connect" in token
    assert "DBUser=gpudev_api_login" in token
    assert "X-Amz-Expires=900" in token


def test_a_host_without_a_login_role_fails_loudly():
    with pytest.raises(ValueError, match="DB_HOST needs DB_IAM_USER"):
        _iam_settings(db_iam_user=None)


def test_the_pool_waits_less_than_the_api_functions_timeout_by_default():
    from cdk_app.declaration import API

    assert DatabaseSettings(database_url="x").db_pool_timeout_seconds < API.timeout_seconds / 2
