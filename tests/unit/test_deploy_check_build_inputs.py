"""`make deploy-check` refuses what a deploy cannot ship: no RDS CA bundle, a file that is
not one, or the placeholder a review synth (`make synth` on a clean clone) put in the layer."""

from __future__ import annotations

from pathlib import Path

from cdk_app.ca_bundle import PLACEHOLDER
from tests.support.certificates import make_ca_bundle
from tools.deploy_check import Context, check_build_inputs, report


def _bundle_finding(path: Path):  # type: ignore[no-untyped-def]
    (finding,) = check_build_inputs(Context({"gpudev:rdsCaBundle": str(path)}))
    assert finding.check == "RDS CA bundle" and finding.required
    return finding


def test_a_missing_bundle_fails_saying_how_to_fetch_it(tmp_path: Path, capsys):
    finding = _bundle_finding(tmp_path / "rds-global-bundle.pem")
    assert not finding.ok
    assert "is missing" in finding.detail and "make rds-ca-bundle" in finding.detail
    assert report([finding]) == 1
    assert "1 required prerequisite(s) missing" in capsys.readouterr().out


def test_the_review_placeholder_is_refused(tmp_path: Path):
    placeholder = tmp_path / "rds-global-bundle.pem"
    placeholder.write_bytes(PLACEHOLDER)
    finding = _bundle_finding(placeholder)
    assert not finding.ok
    assert "is the review placeholder, not the RDS CA bundle" in finding.detail


def test_a_file_that_is_not_a_pem_bundle_is_refused(tmp_path: Path):
    html = tmp_path / "rds-global-bundle.pem"
    html.write_text("<html>captive portal</html>")
    finding = _bundle_finding(html)
    assert not finding.ok and "is not a PEM certificate bundle" in finding.detail


def test_a_pem_bundle_passes(tmp_path: Path):
    finding = _bundle_finding(make_ca_bundle(tmp_path))
    assert finding.ok and finding.detail.endswith("test-ca-bundle.pem")


def test_without_the_context_key_the_layers_own_path_is_checked():
    (finding,) = check_build_inputs(Context({}))
    assert "layers/gpudev/certs/rds-global-bundle.pem" in finding.detail
