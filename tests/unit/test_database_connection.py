from __future__ import annotations

import json

from psycopg.conninfo import conninfo_to_dict

from gpudev.db.pool import conninfo
from gpudev.settings import DatabaseSettings


def test_database_url_is_used_as_is():
    settings = DatabaseSettings(database_url="postgresql://u@h:1/d")
    assert conninfo(settings) == "postgresql://u@h:1/d"


def test_aurora_secret_becomes_a_tls_connection_string():
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
        "sslmode": "require",
    }
