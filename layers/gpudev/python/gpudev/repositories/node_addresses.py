"""The lock that lets one availability run at a time give EFA nodes their Elastic IPs
(sql/node_addresses/): a session advisory lock, tried, never waited for."""

from __future__ import annotations

from typing import Any

import psycopg

from gpudev.db.queries import query


class NodeAddressesLock:
    def __init__(self, conn: psycopg.Connection[Any], key: int):
        self._conn = conn
        self._key = {"key": key}

    def try_take(self) -> bool:
        with self._conn.transaction():
            row = self._conn.execute(query("node_addresses/try_lock"), self._key).fetchone()
        return bool(row and row[0])

    def give_back(self) -> None:
        with self._conn.transaction():
            self._conn.execute(query("node_addresses/unlock"), self._key)
