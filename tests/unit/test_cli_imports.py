"""`gpu-dev --help` and `--version` answer at once: they load neither the AWS SDK nor rich nor
an HTTP client (bench/cold_start.py measures the wall time); a command that calls the API
signs with botocore alone, never boto3."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("boto3", "botocore", "rich", "urllib.request", "importlib.metadata")


def _loaded_after(argv: list[str], then: str = "") -> tuple[str, set[str]]:
    code = (
        "import json, sys\n"
        "from gpudev_cli.main import cli\n"
        "try:\n"
        f"    cli({argv!r}, prog_name='gpu-dev')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"{then}"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return result.stdout, set(json.loads(result.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [["--help"], ["list", "--help"], ["reserve", "--help"]])
def test_help_loads_no_sdk_rich_or_http_client(argv):
    output, loaded = _loaded_after(argv)
    assert "Usage: gpu-dev" in output
    assert not {m for m in loaded if m.split(".")[0] in HEAVY or m in HEAVY}


def test_version_reads_the_package_metadata_only_when_asked():
    output, loaded = _loaded_after(["--version"])
    assert output.startswith("gpu-dev, version ")
    assert not {m for m in loaded if m.split(".")[0] in {"boto3", "botocore", "rich"}}


def test_a_signed_request_uses_botocore_without_boto3(tmp_path):
    sign = (
        "from gpudev_cli.client import SigV4Client, session_for\n"
        "client = SigV4Client('https://api.example', session_for(None, 'us-east-2'))\n"
        "headers = client.signed_headers('GET', '/v1/reservations')\n"
        "assert headers['Authorization'].startswith('AWS4-HMAC-SHA256 '), headers\n"
    )
    environment = {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
    }
    code = (
        "import json, os, sys\n"
        f"os.environ.update({environment!r})\n"
        f"{sign}"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout))
    assert "botocore.auth" in loaded and "boto3" not in loaded
