"""The RDS CA bundle the layer ships, and the placeholder a review synth may use instead.

The functions verify Aurora's certificate against the bundle (sslmode=verify-full), so a
deploy needs the real one: `make rds-ca-bundle` fetches it (needs the internet). A clean
clone has none; `make synth` (a review: no deploy follows from it) sets CDK context
`gpudev:placeholderCaBundle` and then synthesizes with a placeholder that says what it is.
A deploy (`cdk deploy`, which does not set that key) refuses a missing bundle, and so do
`make deploy-check` and CloudFormation itself, through a rule in a placeholder's template.

No CDK imports: `tools/deploy_check.py` checks the same file by the same rules.
"""

from __future__ import annotations

from pathlib import Path

from cdk_app.paths import CA_BUNDLE_CONTEXT, RDS_CA_BUNDLE, RDS_CA_BUNDLE_URL, ROOT

# CDK context: "true" lets a synth without the bundle go on with the placeholder (make synth)
PLACEHOLDER_CONTEXT = "gpudev:placeholderCaBundle"
PLACEHOLDER_MARK = b"GPUDEV PLACEHOLDER, NOT THE RDS CA BUNDLE"
PLACEHOLDER = (
    b"# " + PLACEHOLDER_MARK + b"\n"
    b"# Synthesized for review without the RDS CA bundle (`make synth` on a clean clone).\n"
    b"# Nothing can verify Aurora's certificate with this file: a deploy needs the real\n"
    b"# bundle (`make rds-ca-bundle`), and refuses this one.\n"
)
# What CloudFormation answers when a template with the placeholder is deployed anyway.
PLACEHOLDER_RULE_MESSAGE = (
    "This template was synthesized for review with a placeholder RDS CA bundle "
    "(gpudev:placeholderCaBundle): run `make rds-ca-bundle`, then synthesize and deploy again"
)


class RdsCaBundleMissing(RuntimeError):
    """The layer needs the RDS CA bundle to verify Aurora's certificate (verify-full)."""


def configured_path(context_value: object) -> Path:
    """The bundle's path: CDK context `gpudev:rdsCaBundle` (relative to the repository) or
    the default under the layer."""
    path = Path(str(context_value)) if context_value else RDS_CA_BUNDLE
    return path if path.is_absolute() else ROOT / path


def fetch_hint() -> str:
    return (
        f"Fetch it from AWS: `make rds-ca-bundle` (curl -fsSL {RDS_CA_BUNDLE_URL} "
        f"-o {RDS_CA_BUNDLE.relative_to(ROOT)}), or point CDK context {CA_BUNDLE_CONTEXT} at "
        "a copy."
    )


def rds_ca_bundle(path: Path) -> Path:
    """The bundle, checked: a PEM file of certificates, not the placeholder; else a clear
    error saying how to fetch it."""
    path = path if path.is_absolute() else ROOT / path
    content = path.read_bytes() if path.is_file() else b""
    if PLACEHOLDER_MARK in content:
        problem = "is the review placeholder, not the RDS CA bundle"
    elif not path.is_file():
        problem = "is missing"
    elif b"-----BEGIN CERTIFICATE-----" not in content:
        problem = "is not a PEM certificate bundle"
    else:
        return path
    raise RdsCaBundleMissing(
        f"the RDS CA bundle {path} {problem}. The layer ships it so functions can verify "
        f"Aurora's certificate (sslmode=verify-full). {fetch_hint()}"
    )


def placeholder_allowed(context_value: object) -> bool:
    if context_value in (None, False, "false"):
        return False
    if context_value in (True, "true"):
        return True
    raise ValueError(f"context {PLACEHOLDER_CONTEXT}: true or false; got {context_value!r}")
