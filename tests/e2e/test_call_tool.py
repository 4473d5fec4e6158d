"""`python -m localcloud.call` is a thin wrapper over the CLI's client: signed as a profile of
the standard credential chain, or unsigned and refused like API Gateway."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localcloud.call import main
from localcloud.stack import LocalCloud


@pytest.fixture
def stack(local_cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(local_cloud.credentials_file))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    path = tmp_path / "stack.json"
    path.write_text(json.dumps(local_cloud.describe()))
    return path


def _printed(capsys: pytest.CaptureFixture[str]) -> tuple[int, object]:
    status, body = capsys.readouterr().out.split(" ", 1)
    return int(status), json.loads(body)


def test_a_profile_calls_as_itself(stack: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["--stack", str(stack), "--profile", "carol", "GET", "/v1/me"]) == 0
    status, body = _printed(capsys)
    assert status == 200 and body["username"] == "carol@example.com"  # type: ignore[index]


def test_an_unsigned_call_is_refused_like_api_gateway(
    stack: Path, capsys: pytest.CaptureFixture[str]
):
    assert main(["--stack", str(stack), "--unsigned", "GET", "/v1/me"]) == 1
    assert _printed(capsys) == (403, {"message": "Missing Authentication Token"})


def test_a_body_is_sent_as_json(stack: Path, capsys: pytest.CaptureFixture[str]):
    body = json.dumps({"gpu_type": "t4", "gpu_count": 3, "hours": 1})
    assert (
        main(
            ["--stack", str(stack), "--profile", "bob", "--data", body, "POST", "/v1/reservations"]
        )
        == 1
    )
    status, answer = _printed(capsys)
    assert status == 422 and "t4 accepts 1, 2, 4 GPUs" in json.dumps(answer)
