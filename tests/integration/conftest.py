"""Fixtures of the integration tier."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest


@pytest.fixture
def conn(fresh_database: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection to a private database with no transaction open, as a handler's pooled one."""
    with psycopg.connect(fresh_database) as connection:
        yield connection


@pytest.fixture
def autocommit_conn(fresh_database: str) -> Iterator[psycopg.Connection[Any]]:
    """A connection to a private database in autocommit mode, as the services that commit
    their own transactions are given (`autocommit_connection()`)."""
    with psycopg.connect(fresh_database, autocommit=True) as connection:
        yield connection


@pytest.fixture
def ec2() -> Iterator[Any]:
    """moto's EC2 in us-east-2, private to the test."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-2")
