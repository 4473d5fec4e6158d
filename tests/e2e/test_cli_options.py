"""The global options (--output, --profile, --region, --api-url) before or after the command,
as the AWS CLI takes them, against the local cloud: the value nearest the end wins."""

from __future__ import annotations

import json
import uuid

import pytest


@pytest.mark.parametrize(
    "args",
    [
        ("avail", "-o", "json"),
        ("status", "--output", "json"),
        ("list", "-o", "json"),
        ("disk", "list", "-o", "json"),
        ("config", "show", "--output", "json"),
        ("reserve", "-t", "t4", "-h", "1", "--no-wait", "--output", "json"),
    ],
    ids=lambda args: " ".join(args),
)
def test_every_global_option_after_the_command(run, args):
    # --profile, --region and --api-url after the command too (options_after)
    result = run(*args, options_after=True)
    assert result.exit_code == 0, result.output
    json.loads(result.stdout)  # stdout is one JSON document


@pytest.mark.parametrize(
    ("args", "is_json"),
    [
        (("-o", "table", "list", "-o", "json"), True),
        (("-o", "json", "list", "-o", "table"), False),
        (("-o", "table", "disk", "list", "--output", "json"), True),
        (("-o", "table", "disk", "-o", "table", "list", "-o", "json"), True),
        (("--output", "json", "avail", "-o", "table"), False),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else str(value),
)
def test_given_before_and_after_the_value_after_wins(run, args, is_json):
    result = run(*args)
    assert result.exit_code == 0, result.output
    assert result.stdout.lstrip().startswith(("[", "{")) is is_json


def test_a_profile_after_the_command_is_the_one_that_signs(run):
    # the fixture passes --profile alice before the command
    name = f"opts-{uuid.uuid4().hex[:8]}"
    run("reserve", "-t", "t4", "-h", "1", "--name", name, "--no-wait")
    alices = json.loads(run("list", "-o", "json").stdout)
    bobs = json.loads(run("list", "--profile", "bob", "-o", "json").stdout)
    assert name in [r["name"] for r in alices]
    assert name not in [r["name"] for r in bobs]


def test_a_bad_value_after_the_command_is_a_usage_error(run):
    result = run("avail", "-o", "yaml")
    assert result.exit_code == 2
    assert "Invalid value for '--output' / '-o'" in result.output


def test_csv_is_refused_before_a_command_that_cannot_print_it_acts(run):
    """`--output csv` is the usage reports' only: `reserve -o csv` must not reserve and then
    fail to print, and `config show -o csv` (no request) is refused the same way."""
    name = f"csv-{uuid.uuid4().hex[:8]}"
    for args in (
        ("reserve", "-t", "t4", "-h", "1", "--name", name, "--no-wait"),
        ("config", "show"),
    ):
        result = run(*args, "-o", "csv")
        assert result.exit_code == 1, result.output
        assert "--output csv is for `gpu-dev usage` and `gpu-dev admin usage`" in result.output
    reservations = json.loads(run("list", "--all", "-o", "json").stdout)
    assert name not in [r["name"] for r in reservations]
