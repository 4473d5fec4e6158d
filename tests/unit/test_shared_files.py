"""The personal share's pure parts: access-point naming and client token
(gpudev/shared_files/access_points.py), the file system policy (cdk_app/shared_files_policy.py),
the pod's volume, mount and cache variables (gpudev/cluster/shared_files.py), its settings,
and the moto seam the local cloud adds to CreateAccessPoint (localcloud/moto_efs.py)."""

from __future__ import annotations

import json
import re
from typing import Any
from uuid import uuid4

import pytest

from cdk_app.declaration import ACCESS_POINT_USER_TAG, CCACHE_MAX_SIZE, SHARED_FILE_SYSTEM_ID
from cdk_app.shared_files_policy import file_system_policy
from gpudev.cluster import shared_files
from gpudev.settings import SettingsError, SharedFilesSettings, _load
from gpudev.shared_files.access_points import (
    USER_TAG,
    belongs_to,
    client_token,
    create_request,
    root_directory,
    user_key,
)
from localcloud import moto_efs

FS = "fs-0123456789abcdef0"


def test_a_plain_username_is_its_own_directory():
    assert user_key("alice") == "alice"
    assert root_directory("alice") == "/users/alice"
    assert root_directory("Alice_2-b") == "/users/Alice_2-b"


@pytest.mark.parametrize(
    "user", ["carol@example.com", "a.b", "..", "x+y=z,w", "a" * 41, ".hidden", "@@@"]
)
def test_any_other_username_becomes_a_safe_key_with_its_hash(user: str):
    key = user_key(user)
    readable, digest = key.split(".")
    assert (readable + digest).replace("-", "").replace("_", "").isalnum()
    assert not key.startswith(("-", "_", ".")) and len(key) <= 40
    assert key != user and key.endswith(
        __import__("hashlib").sha256(user.encode()).hexdigest()[:12]
    )


def test_two_users_whose_readable_forms_collide_get_different_directories():
    assert user_key("a.b") != user_key("a,b")
    assert root_directory("carol@example.com") != root_directory("carol@example.org")


def test_a_plain_username_shaped_like_a_hashed_key_never_gets_that_key():
    """The review's finding: `alice.smith`'s key was `alice_smith-6342582757b1`, a plain
    username of its own, so the two users shared /users/alice_smith-6342582757b1."""
    hashed = user_key("alice.smith")
    assert hashed == "alice_smith.6342582757b1"
    assert user_key("alice_smith-6342582757b1") == "alice_smith-6342582757b1"
    assert user_key("alice_smith-6342582757b1") != hashed
    digest_only = user_key("@@@")
    assert user_key(digest_only.split(".")[1]) != digest_only


TRICKY = [
    "alice.smith",
    "alice_smith",
    "alice-smith",
    "alice_smith-6342582757b1",
    "alice_smith.6342582757b1",
    "Alice.Smith",
    "a" * 40,
    "a" * 41,
    "a" * 40 + ".",
    "@@@",
    "@@",
    "user",
    "-x",
    "_x",
    "x ",
    "é",
    "e",
    "a/b",
    "a\\b",
    "..",
    ".",
]


def test_no_two_tricky_usernames_share_a_key_and_every_key_fits_a_path_and_a_tag():
    names = TRICKY + [user_key(n) for n in TRICKY]  # each key tried as a username too
    keys: dict[str, str] = {}
    for name in dict.fromkeys(names):
        key = user_key(name)
        assert keys.setdefault(key, name) == name, f"{name!r} and {keys[key]!r} share {key}"
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}", key), key
        assert key not in (".", "..") and "/" not in key


def test_an_empty_username_is_refused():
    with pytest.raises(ValueError):
        user_key("")


def test_the_client_token_is_stable_per_user_and_file_system_and_fits_efs():
    token = client_token(FS, "alice")
    assert token == client_token(FS, "alice")
    assert token != client_token(FS, "bob") and token != client_token("fs-11111111", "alice")
    assert 1 <= len(token) <= 64


def test_the_request_enforces_dev_and_the_users_root():
    request = create_request(FS, "carol@example.com")
    assert request["ClientToken"] == client_token(FS, "carol@example.com")
    assert request["PosixUser"] == {"Uid": 1081, "Gid": 1081}
    root = request["RootDirectory"]
    assert root["Path"] == root_directory("carol@example.com")
    assert root["CreationInfo"] == {"OwnerUid": 1081, "OwnerGid": 1081, "Permissions": "0700"}
    tags = {t["Key"]: t["Value"] for t in request["Tags"]}
    assert tags[USER_TAG] == user_key("carol@example.com") and USER_TAG == ACCESS_POINT_USER_TAG


def _point(**changes: Any) -> dict[str, Any]:
    request = create_request(FS, "alice")
    point = {
        "FileSystemId": FS,
        "RootDirectory": request["RootDirectory"],
        "PosixUser": request["PosixUser"],
    }
    return point | changes


def test_only_the_users_own_access_point_is_accepted():
    assert belongs_to(_point(), FS, "alice")
    assert not belongs_to(_point(), FS, "bob")
    assert not belongs_to(_point(FileSystemId="fs-11111111"), FS, "alice")
    assert not belongs_to(_point(PosixUser={"Uid": 0, "Gid": 0}), FS, "alice")
    assert not belongs_to(_point(RootDirectory={"Path": "/"}), FS, "alice")


def test_the_policy_denies_plain_nfs_and_allows_the_csi_role_through_access_points_only():
    policy = file_system_policy("arn:fs", "arn:role", "arn:aps/*")
    deny, allow = policy["Statement"]
    assert deny == {
        "Sid": "DenyWithoutTls",
        "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Action": "*",
        "Resource": "arn:fs",
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }
    assert allow["Principal"] == {"AWS": "arn:role"}
    assert allow["Condition"] == {
        "Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"},
        "ArnLike": {"elasticfilesystem:AccessPointArn": "arn:aps/*"},
    }
    assert "ClientRootAccess" not in json.dumps(policy)
    # Nothing else is allowed: no statement names an anonymous or a wildcard principal.
    assert [s for s in policy["Statement"] if s["Effect"] == "Allow"] == [allow]


def _reservation() -> Any:
    from gpudev.models import Reservation

    return Reservation.model_construct(reservation_id=uuid4(), user_id="alice", total_nodes=2)


def test_the_volume_is_the_users_access_point_read_write_many_retained_with_tls_and_iam():
    reservation = _reservation()
    share = shared_files.PersonalShare(FS, "fsap-0123456789abcdef0")
    volume = shared_files.persistent_volume(reservation, "gpu-dev", share)
    spec = volume["spec"]
    assert spec["csi"] == {
        "driver": "efs.csi.aws.com",
        "volumeHandle": f"{FS}::fsap-0123456789abcdef0",
    }
    assert spec["accessModes"] == ["ReadWriteMany"]
    assert spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert set(spec["mountOptions"]) == {"tls", "iam"}
    assert spec["claimRef"] == {"namespace": "gpu-dev", "name": shared_files.name_of(reservation)}
    assert "nodeAffinity" not in spec  # every zone has a mount target
    claim = shared_files.claim(reservation)
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
    assert volume["metadata"]["labels"]["gpu-dev/reservation"] == str(reservation.reservation_id)


def test_every_pod_gets_the_mount_and_the_cache_variables():
    pod = {"spec": {"volumes": [], "containers": [{"volumeMounts": [], "env": []}]}}
    shared_files.mount_in_pod(pod, "claim-x", "50G")
    assert pod["spec"]["volumes"] == [
        {"name": "shared-personal", "persistentVolumeClaim": {"claimName": "claim-x"}}
    ]
    container = pod["spec"]["containers"][0]
    assert container["volumeMounts"] == [
        {"name": "shared-personal", "mountPath": "/run/gpu-dev/share/mnt"}
    ]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env == {
        "CCACHE_DIR": "/shared-personal/.cache/ccache",
        "CCACHE_MAXSIZE": "50G",
        "SCCACHE_DIR": "/shared-personal/.cache/sccache",
        "SCCACHE_CACHE_SIZE": "50G",
    }


def test_the_startup_script_hands_the_cache_variables_to_ssh_sessions():
    from gpudev.cluster.objects import startup_script

    script = startup_script()
    assert "|CCACHE_[A-Z_]+|SCCACHE_[A-Z_]+)$" in script


def test_shared_files_settings_default_to_off_and_refuse_bad_values(monkeypatch):
    assert SharedFilesSettings().enabled is False
    assert SharedFilesSettings().file_system_id == SHARED_FILE_SYSTEM_ID.default
    assert SharedFilesSettings().ccache_max_size == CCACHE_MAX_SIZE.default
    monkeypatch.setenv("SHARED_FILES_FILE_SYSTEM_ID", FS)
    assert SharedFilesSettings().enabled is True
    for variable, bad in (
        ("SHARED_FILES_FILE_SYSTEM_ID", "fsap-0123"),
        ("SHARED_FILES_FILE_SYSTEM_ID", ""),
        ("SHARED_FILES_CCACHE_MAX_SIZE", "lots"),
        ("SHARED_FILES_CCACHE_MAX_SIZE", "0G"),
    ):
        monkeypatch.setenv(variable, bad)
        with pytest.raises(SettingsError, match="SharedFilesSettings"):
            _load(SharedFilesSettings)
        monkeypatch.delenv(variable)


def test_the_create_access_point_seam_has_the_shape_we_wrap():
    assert moto_efs.seam_signature() == moto_efs.EXPECTED_SIGNATURE


def test_the_seam_makes_create_access_point_idempotent_as_efs_does():
    import boto3
    from botocore.exceptions import ClientError
    from moto import mock_aws

    uninstall = moto_efs.install()
    try:
        with mock_aws():
            efs = boto3.client("efs", region_name="us-east-2")
            fs = efs.create_file_system(CreationToken="t")["FileSystemId"]
            first = efs.create_access_point(**create_request(fs, "alice"))
            again = efs.create_access_point(**create_request(fs, "alice"))
            assert first["AccessPointId"] == again["AccessPointId"]
            changed = create_request(fs, "alice") | {"PosixUser": {"Uid": 0, "Gid": 0}}
            with pytest.raises(ClientError, match="IdempotentParameterMismatch"):
                efs.create_access_point(**changed)
            with pytest.raises(ClientError, match="FileSystemNotFound"):
                efs.create_access_point(**create_request("fs-99999999", "alice"))
            assert len(efs.describe_access_points()["AccessPoints"]) == 1
    finally:
        uninstall()
