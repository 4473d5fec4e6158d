"""The stand-in's TLS: a certificate authority made at each start and a server certificate
it signs for 127.0.0.1 and localhost, as EKS gives each cluster its own CA.

Clients trust the CA, never the server certificate itself: moto's DescribeCluster hands out
the CA as `certificateAuthority.data` (base64 PEM, as EKS does) and `.local/kubeconfig`
carries it as `certificate-authority-data`. Keys are ECDSA P-256: generating them takes
milliseconds and a handshake costs less than with RSA (clients keep their connections
alive, so one handshake serves many requests)."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_FOR = datetime.timedelta(days=30)


@dataclass(frozen=True)
class ServerCertificate:
    ca_pem: bytes  # what clients trust
    certificate_pem: bytes  # the server's, signed by the CA
    key_pem: bytes  # the server's private key (never leaves this process)

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # ssl loads a chain only from files: a private temporary directory, gone at once.
        with tempfile.TemporaryDirectory(prefix="gpudev-tls-") as directory:
            chain, key = Path(directory) / "server.pem", Path(directory) / "server.key"
            chain.write_bytes(self.certificate_pem + self.ca_pem)
            key.write_bytes(self.key_pem)
            context.load_cert_chain(chain, key)
        return context

    def client_context(self) -> ssl.SSLContext:
        """A context that trusts this CA only (for tests and local tools)."""
        return ssl.create_default_context(cadata=self.ca_pem.decode())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def issue_server_certificate(
    now: datetime.datetime | None = None,
) -> ServerCertificate:
    """A new CA and a server certificate for 127.0.0.1 and localhost signed by it."""
    now = now or datetime.datetime.now(datetime.UTC)
    not_before = now - datetime.timedelta(minutes=5)  # clocks of clients may lag a little
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("gpudev-local-kubernetes-ca")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(now + VALID_FOR)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(_name("kube-apiserver"))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(now + VALID_FOR)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.DNSName("localhost"),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return ServerCertificate(
        ca.public_bytes(serialization.Encoding.PEM),
        server.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
