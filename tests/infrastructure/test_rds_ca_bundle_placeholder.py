"""`make synth` works on a clean clone (no RDS CA bundle, no internet): with
`gpudev:placeholderCaBundle` the layer gets a placeholder that says what it is, the synth
warns, and the template carries a rule that fails any deploy of it. Without that key (the
deploy path) a missing bundle stops the app with a clear message, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template

from cdk_app.app import main
from cdk_app.ca_bundle import (
    PLACEHOLDER,
    PLACEHOLDER_CONTEXT,
    PLACEHOLDER_RULE_MESSAGE,
    RdsCaBundleMissing,
    placeholder_allowed,
)
from cdk_app.functions import build_shared_layer
from cdk_app.layer_bundling import LAYER_CA_BUNDLE
from cdk_app.paths import CA_BUNDLE_CONTEXT

ROOT = Path(__file__).resolve().parents[2]


def _layer_stack(tmp_path: Path, **context: Any) -> tuple[cdk.App, cdk.Stack]:
    app = cdk.App(outdir=str(tmp_path / "out"), context=context)
    stack = cdk.Stack(app, "LayerOnly")
    build_shared_layer(stack)
    return app, stack


def _shipped_bundle(app: cdk.App) -> bytes:
    outdir = Path(app.synth().directory)
    assets = json.loads((outdir / "LayerOnly.assets.json").read_text())["files"]
    (layer,) = [
        outdir / a["source"]["path"]
        for a in assets.values()
        if (outdir / a["source"]["path"] / "python" / "gpudev").is_dir()
    ]
    return (layer / LAYER_CA_BUNDLE).read_bytes()


def test_a_review_synth_without_the_bundle_ships_a_marked_placeholder_and_a_failing_rule(
    tmp_path: Path,
):
    app, stack = _layer_stack(
        tmp_path,
        **{CA_BUNDLE_CONTEXT: str(tmp_path / "absent.pem"), PLACEHOLDER_CONTEXT: "true"},
    )
    (assertion,) = Template.from_stack(stack).to_json()["Rules"]["RdsCaBundleIsPlaceholder"][
        "Assertions"
    ]
    assert assertion["AssertDescription"] == PLACEHOLDER_RULE_MESSAGE
    # False for every bootstrap version, as CDK's own CheckBootstrapVersion rule is built.
    assert assertion["Assert"] == {
        "Fn::Contains": [["placeholder-rds-ca-bundle"], {"Ref": "BootstrapVersion"}]
    }
    Annotations.from_stack(stack).has_warning(
        "*", Match.string_like_regexp("PLACEHOLDER RDS CA bundle.*make rds-ca-bundle")
    )
    shipped = _shipped_bundle(app)
    assert shipped == PLACEHOLDER
    assert b"-----BEGIN CERTIFICATE-----" not in shipped  # nothing could verify with it


def test_a_synth_without_the_bundle_and_without_the_review_key_is_refused(tmp_path: Path):
    with pytest.raises(RdsCaBundleMissing, match=r"is missing.*make rds-ca-bundle"):
        _layer_stack(tmp_path, **{CA_BUNDLE_CONTEXT: str(tmp_path / "absent.pem")})


def test_the_review_key_never_replaces_a_real_bundle(synthesized: tuple[Any, Path]):
    # The session's synth has a bundle and no review key; the key changes nothing either
    # way when a bundle is there (the layer ships it, checked in test_database_access).
    stack, _ = synthesized
    assert "RdsCaBundleIsPlaceholder" not in Template.from_stack(stack).to_json().get("Rules", {})


def test_a_placeholder_file_given_as_the_bundle_is_refused_like_a_missing_one(tmp_path: Path):
    copied = tmp_path / "rds-global-bundle.pem"
    copied.write_bytes(PLACEHOLDER)
    with pytest.raises(RdsCaBundleMissing, match="review placeholder"):
        _layer_stack(tmp_path, **{CA_BUNDLE_CONTEXT: str(copied)})


@pytest.mark.parametrize("value", ["yes", "1", "True "])
def test_a_review_key_that_is_not_true_or_false_names_the_key(value: str):
    with pytest.raises(ValueError, match=f"context {PLACEHOLDER_CONTEXT}: true or false"):
        placeholder_allowed(value)


def test_the_app_reports_a_missing_bundle_as_one_line_not_a_traceback(tmp_path: Path, capsys):
    project = json.loads((ROOT / "cdk.json").read_text())["context"]
    context = {**project, CA_BUNDLE_CONTEXT: str(tmp_path / "absent.pem")}
    assert main(outdir=str(tmp_path / "out"), context=context) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: the RDS CA bundle ") and "make rds-ca-bundle" in err
    assert "Traceback" not in err
