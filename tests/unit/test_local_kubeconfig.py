"""`.local/kubeconfig` and its exec credential plugin (`python -m localcloud.eks_token`):
kubectl reaches the stand-in as `aws eks update-kubeconfig` makes it reach EKS."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from localcloud import eks_token
from localcloud.kubeconfig import kubeconfig, write_kubeconfig


def test_the_kubeconfig_carries_the_ca_and_an_eks_token_plugin_and_is_private(tmp_path: Path):
    path = tmp_path / "state" / "kubeconfig"
    path.parent.mkdir()
    path.write_text("old")
    path.chmod(0o644)  # an earlier file's mode is not kept
    config = kubeconfig(
        "c1", "https://127.0.0.1:6443", b"PEM", "us-east-2", tmp_path / "credentials"
    )
    write_kubeconfig(path, config)
    assert path.stat().st_mode & 0o777 == 0o600
    written = json.loads(path.read_text())
    cluster = written["clusters"][0]["cluster"]
    assert cluster == {
        "server": "https://127.0.0.1:6443",
        "certificate-authority-data": base64.b64encode(b"PEM").decode(),
    }
    plugin = written["users"][0]["user"]["exec"]
    assert plugin["args"] == [
        "-m",
        "localcloud.eks_token",
        "--cluster-name",
        "c1",
        "--region",
        "us-east-2",
        "--profile",
        "carol",
    ]


def test_a_reader_of_an_earlier_world_readable_kubeconfig_never_sees_the_new_one(tmp_path: Path):
    path = tmp_path / "kubeconfig"
    path.write_text("old")
    path.chmod(0o644)
    config = kubeconfig("c1", "https://127.0.0.1:6443", b"PEM", "us-east-2", tmp_path / "c")
    with path.open() as earlier:  # opened while the file was 0644
        write_kubeconfig(path, config)
        assert earlier.read() == "old"  # a new file took the name; the old one was not rewritten
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["kubeconfig"]  # no temporary file left


def test_the_plugin_prints_an_exec_credential_with_a_presigned_eks_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAPLUGINTEST000000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    assert eks_token.main(["--cluster-name", "c1", "--region", "us-east-2"]) == 0
    credential = json.loads(capsys.readouterr().out)
    assert credential["kind"] == "ExecCredential"
    token = credential["status"]["token"]
    assert token.startswith("k8s-aws-v1.")
    encoded = token.removeprefix("k8s-aws-v1.")
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    query = parse_qs(urlsplit(url).query)
    assert query["Action"] == ["GetCallerIdentity"]
    assert query["X-Amz-Credential"][0].startswith("AKIAPLUGINTEST000000/")
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0]


def test_a_named_profile_wins_over_keys_in_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # kubectl runs the plugin with the caller's environment: a shell (or a test) holding
    # another principal's keys must still get the kubeconfig's profile.
    credentials = tmp_path / "credentials"
    credentials.write_text(
        "[carol]\naws_access_key_id = AKIACAROLPROFILE0000\naws_secret_access_key = s\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAENVIRONMENT00000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    arguments = ["--cluster-name", "c1", "--region", "us-east-2", "--profile", "carol"]
    assert eks_token.main(arguments) == 0
    token = json.loads(capsys.readouterr().out)["status"]["token"]
    encoded = token.removeprefix("k8s-aws-v1.")
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    assert parse_qs(urlsplit(url).query)["X-Amz-Credential"][0].startswith("AKIACAROLPROFILE0000/")


def test_the_plugin_without_credentials_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert eks_token.main(["--cluster-name", "c1", "--region", "us-east-2"]) == 1
    assert "cannot issue an EKS token" in capsys.readouterr().err
