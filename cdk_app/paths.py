"""Where things are in the repository, for the CDK app and its helper scripts."""

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYER_DIR = ROOT / "layers" / "gpudev"
FUNCTIONS_DIR = ROOT / "functions"
MIGRATIONS_DIR = ROOT / "migrations"
BUILD_DIR = ROOT / ".build"
# The RDS CA bundle, a build input of the layer (docs/security.md)
RDS_CA_BUNDLE = LAYER_DIR / "certs" / "rds-global-bundle.pem"
RDS_CA_BUNDLE_URL = "https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem"
# CDK context: another path to the bundle (relative to the repository root)
CA_BUNDLE_CONTEXT = "gpudev:rdsCaBundle"


def uv_executable() -> str:
    """The project's pinned uv (installed by make), else one on PATH."""
    local = ROOT / ".tools" / "bin" / "uv"
    found = str(local) if local.exists() else shutil.which("uv")
    if not found:
        raise RuntimeError("uv not found: run `make setup` first")
    return found
