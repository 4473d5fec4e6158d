"""The image pre-puller's step (gpudev/prepuller/) against real PostgreSQL and the
Kubernetes stand-in's API server through the official client: the list is the default image
first and the most used images of the last N days (bounded, ties by the latest use), as the
reconcilers' role reads it; the DaemonSet is patched once when the list changes and never
when it does not; no tools image, or a DaemonSet that is not there, changes nothing and does
not fail the run."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml  # type: ignore[import-untyped]
from psycopg import sql

from gpudev.prepuller.plan import IMAGES_ANNOTATION
from gpudev.prepuller.service import refresh_prepuller
from gpudev.repositories.prepuller import PrepullerRepository
from gpudev.settings import PrepullerSettings
from localcloud.kubernetes.store import ObjectStore
from tests.support.kubernetes import stand_in_api_client, stand_in_server

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = "pytorch/pytorch:2.8.0-cuda12.9-cudnn9-devel"
TOOLS = "registry.example/gpu-dev-tools:1"
SYSTEM, NAME = "gpu-dev-prepuller", "gpu-dev-prepuller"
SETTINGS = PrepullerSettings(days=7, images=2, tools_image=TOOLS)


def _image(n: int) -> str:
    return f"registry.example/team/img{n}@sha256:{str(n) * 64}"


def _reserve(
    conn: psycopg.Connection[Any], image: str | None, days_ago: float = 0, user: str = "alice"
) -> None:
    conn.execute(
        "INSERT INTO users (username, principal_arn) VALUES"
        " (%s, 'arn:aws:iam::123456789012:user/' || %s) ON CONFLICT DO NOTHING",
        (user, user),
    )
    digest = image.split("@", 1)[1] if image else None
    conn.execute(
        "INSERT INTO reservations (reservation_id, user_id, gpu_type, gpu_count, duration_hours,"
        " github_user, image, image_digest, image_pull, created_at)"
        " VALUES (%s, %s, 't4', 1, 1, 'octocat', %s, %s, %s,"
        " now() - make_interval(secs => %s))",
        (uuid.uuid4(), user, image, digest, image, days_ago * 86400),
    )


def _as_reconcilers(conn: psycopg.Connection[Any]) -> None:
    conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier("gpudev_reconcilers")))


def test_the_most_used_images_of_the_window_most_used_first_and_bounded(db):
    for n, uses in ((1, 1), (2, 3), (3, 2), (4, 1)):
        for _ in range(uses):
            _reserve(db, _image(n), days_ago=1)
    _reserve(db, _image(4), days_ago=0.5)  # 4 ties with 3 (2 uses), used later: first
    for _ in range(5):
        _reserve(db, _image(5), days_ago=8)  # outside the 7 days
    _reserve(db, None)  # the default image: not a row of the list
    _as_reconcilers(db)
    repository = PrepullerRepository(db)
    assert repository.most_used_images(7, 10) == [_image(2), _image(4), _image(3), _image(1)]
    assert repository.most_used_images(7, 2) == [_image(2), _image(4)]
    assert repository.most_used_images(30, 1) == [_image(5)]
    assert repository.most_used_images(7, 0) == []


def test_an_image_more_users_asked_for_comes_before_one_users_many_reservations(db):
    for _ in range(10):
        _reserve(db, _image(1), days_ago=1)  # alice, ten times
    _reserve(db, _image(2), days_ago=1, user="bob")
    _reserve(db, _image(2), days_ago=1, user="carol")
    _as_reconcilers(db)
    assert PrepullerRepository(db).most_used_images(7, 1) == [_image(2)]


@pytest.fixture
def cluster() -> Iterator[tuple[ObjectStore, Any]]:
    store = ObjectStore()
    server = stand_in_server(store)
    server.start()
    api = stand_in_api_client(server)
    try:
        yield store, api
    finally:
        api.close()
        server.stop()


def _apply_daemon_set(store: ObjectStore) -> None:
    """The folder's namespace, then its DaemonSet, as an operator applies them."""
    folder = ROOT / "deploy/kubernetes/prepuller"
    store.create("namespaces", "", yaml.safe_load((folder / "namespace.yaml").read_text()))
    store.create("daemonsets", SYSTEM, yaml.safe_load((folder / "daemonset.yaml").read_text()))


def _version(store: ObjectStore) -> str:
    return str(store.get("daemonsets", SYSTEM, NAME)["metadata"]["resourceVersion"])


def test_the_daemon_set_is_patched_once_when_the_list_changes_and_never_otherwise(db, cluster):
    store, api = cluster
    _apply_daemon_set(store)
    _reserve(db, _image(1))
    first = refresh_prepuller(db, lambda: api, SETTINGS, DEFAULT)
    assert first.images == [DEFAULT, _image(1)] and first.patched
    template = store.get("daemonsets", SYSTEM, NAME)["spec"]["template"]
    assert [c["image"] for c in template["spec"]["initContainers"]] == [TOOLS, DEFAULT, _image(1)]
    assert (
        template["metadata"]["annotations"][IMAGES_ANNOTATION] == f"{TOOLS} {DEFAULT} {_image(1)}"
    )
    version = _version(store)

    again = refresh_prepuller(db, lambda: api, SETTINGS, DEFAULT)
    assert again.images == first.images and not again.patched
    assert _version(store) == version  # nothing written

    _reserve(db, _image(2))
    _reserve(db, _image(2))
    changed = refresh_prepuller(db, lambda: api, SETTINGS, DEFAULT)
    assert changed.images == [DEFAULT, _image(2), _image(1)] and changed.patched
    assert store.get("daemonsets", SYSTEM, NAME)["metadata"]["generation"] == 3


def test_without_a_tools_image_the_pre_puller_is_off(db, cluster):
    store, api = cluster
    _apply_daemon_set(store)
    version = _version(store)
    off = PrepullerSettings(days=7, images=2, tools_image="")
    run = refresh_prepuller(db, lambda: api, off, DEFAULT)
    assert run.skipped == "no tools image" and not run.patched
    assert _version(store) == version


def test_a_daemon_set_not_applied_is_logged_and_skipped_not_raised(db, cluster):
    _, api = cluster
    run = refresh_prepuller(db, lambda: api, SETTINGS, DEFAULT)
    assert run.skipped == "not applied" and not run.patched
    assert run.statistics["prepuller_skipped"] == "not applied"


def test_a_refusal_is_logged_and_skipped_not_raised(db):
    def unreachable() -> Any:
        raise ConnectionRefusedError("no cluster")

    run = refresh_prepuller(db, unreachable, SETTINGS, DEFAULT)
    assert run.skipped == "ConnectionRefusedError" and run.images == []
