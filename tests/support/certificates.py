"""A throwaway CA certificate for synths in tests.

The layer needs the RDS CA bundle (cdk_app/layer_bundling.py), which is fetched from AWS
and cannot be downloaded here. Tests synthesize with CDK context `gpudev:rdsCaBundle`
pointing at this self-signed certificate instead: it is a real certificate, clearly named
as a test one, and nothing ever connects with it.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from cdk_app.paths import CA_BUNDLE_CONTEXT

ROOT = Path(__file__).resolve().parents[2]


def make_ca_bundle(directory: Path) -> Path:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpu-dev test CA (not RDS)")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    path = directory / "test-ca-bundle.pem"
    path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return path


def synth_context(directory: Path) -> dict[str, object]:
    """CDK context for a test synth: cdk.json's, as `cdk synth` reads it, with the test CA
    bundle in place of the RDS one."""
    project_context = json.loads((ROOT / "cdk.json").read_text())["context"]
    return {**project_context, CA_BUNDLE_CONTEXT: str(make_ca_bundle(directory))}
