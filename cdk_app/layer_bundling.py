"""Builds the shared Lambda layer without Docker.

Layout of the asset (mounted at /opt in Lambda):
  python/            pinned runtime wheels for Lambda (arm64, Python 3.12) + the gpudev package
  migrations/        the numbered .sql files the migration function applies
  certs/             the RDS CA bundle (a build input: cdk_app/ca_bundle.py), or, in a
                     review synth without it, the placeholder that says so

Wheels are installed once per requirements digest into `.build/layer-deps/<digest>` (uv,
`--only-binary`, `--no-deps`: requirements.txt is the full pinned closure from uv.lock),
so a re-synth only copies files.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsii
from aws_cdk import BundlingOptions, DockerImage, ILocalBundling

from cdk_app.ca_bundle import PLACEHOLDER
from cdk_app.paths import BUILD_DIR, LAYER_DIR, MIGRATIONS_DIR, uv_executable

PYTHON_VERSION = "3.12"
PLATFORM = "aarch64-manylinux_2_28"
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


def installed_dependencies(requirements: Path) -> Path:
    digest = hashlib.sha256(
        requirements.read_bytes() + f"{PLATFORM}/{PYTHON_VERSION}".encode()
    ).hexdigest()[:16]
    target = BUILD_DIR / "layer-deps" / digest
    if not target.exists():
        staging = target.with_name(f"{digest}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        subprocess.run(
            [
                uv_executable(),
                "pip",
                "install",
                "--quiet",
                "--target",
                str(staging),
                "--python-platform",
                PLATFORM,
                "--python-version",
                PYTHON_VERSION,
                "--only-binary",
                ":all:",
                "--no-deps",
                "-r",
                str(requirements),
            ],
            check=True,
        )
        # The asyncio client duplicates the sync one (41 MB); nothing of ours imports it.
        shutil.rmtree(staging / "kubernetes" / "aio", ignore_errors=True)
        staging.rename(target)
    return target


# Where the bundle lands in the asset; Lambda mounts the layer at /opt, so functions read
# /opt/certs/rds-global-bundle.pem (DatabaseSettings.db_ssl_root_cert).
LAYER_CA_BUNDLE = "certs/rds-global-bundle.pem"


@jsii.implements(ILocalBundling)
class LayerBundler:
    def __init__(self, ca_bundle: Path | None):
        self.ca_bundle = ca_bundle  # checked (cdk_app/ca_bundle.py); None: the placeholder

    def try_bundle(self, output_dir: str, options: Any) -> bool:
        out = Path(output_dir)
        shutil.copytree(
            installed_dependencies(LAYER_DIR / "requirements.txt"),
            out / "python",
            dirs_exist_ok=True,
        )
        shutil.copytree(
            LAYER_DIR / "python" / "gpudev",
            out / "python" / "gpudev",
            ignore=_IGNORE,
            dirs_exist_ok=True,
        )
        shutil.copytree(MIGRATIONS_DIR, out / "migrations", dirs_exist_ok=True)
        (out / LAYER_CA_BUNDLE).parent.mkdir(parents=True, exist_ok=True)
        if self.ca_bundle is None:
            (out / LAYER_CA_BUNDLE).write_bytes(PLACEHOLDER)
        else:
            shutil.copyfile(self.ca_bundle, out / LAYER_CA_BUNDLE)
        return True


def layer_bundling(ca_bundle: Path | None) -> BundlingOptions:
    # The image is required by the API but never pulled: local bundling always succeeds.
    # jsii hands `try_bundle` the options positionally, unlike the typed keyword signature.
    return BundlingOptions(
        image=DockerImage.from_registry("unused"),
        local=LayerBundler(ca_bundle),  # type: ignore[arg-type]
    )


def migrations_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()
