"""The stand-in over HTTPS (issue #31 item 3): the official client trusts its CA and keeps
its connection alive (one handshake for many requests); a client without the CA is refused
in the handshake; plain HTTP to the port is told so, as kube-apiserver tells it."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from localcloud.kubernetes.server import KubernetesApiServer
from localcloud.kubernetes.store import ObjectStore
from localcloud.kubernetes.tls import ServerCertificate, issue_server_certificate
from tests.support.kubernetes import eks_token, stand_in_server


@pytest.fixture(scope="module")
def certificate() -> ServerCertificate:
    return issue_server_certificate()


@pytest.fixture(scope="module")
def server(certificate: ServerCertificate) -> Iterator[KubernetesApiServer]:
    server = stand_in_server(ObjectStore(), tls=certificate.server_context()).start()
    yield server
    server.stop()


def test_the_official_client_trusting_the_ca_is_served_on_one_connection(
    server: KubernetesApiServer, certificate: ServerCertificate, tmp_path: Path
):
    from kubernetes import client

    assert server.url.startswith("https://127.0.0.1:")
    ca = tmp_path / "ca.pem"
    ca.write_bytes(certificate.ca_pem)
    configuration = client.Configuration()
    configuration.host = server.url
    configuration.ssl_ca_cert = str(ca)
    configuration.api_key = {"authorization": eks_token(server.cluster_name)}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    with client.ApiClient(configuration) as api_client:
        core = client.CoreV1Api(api_client)
        for _ in range(5):
            assert {n.metadata.name for n in core.list_namespace().items} >= {"gpu-dev"}
        manager = api_client.rest_client.pool_manager
        keys = manager.pools.keys()  # urllib3's container refuses plain iteration
        pools = [manager.pools[key] for key in keys]
        assert [pool.num_connections for pool in pools] == [1]  # kept alive: one handshake


def test_a_client_without_the_ca_fails_the_handshake(server: KubernetesApiServer):
    with pytest.raises(urllib.error.URLError) as refused:
        urllib.request.urlopen(
            server.url + "/version", timeout=5, context=ssl.create_default_context()
        )
    assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)


def test_the_certificate_names_localhost_too(
    server: KubernetesApiServer, certificate: ServerCertificate
):
    url = server.url.replace("127.0.0.1", "localhost") + "/version"
    with pytest.raises(urllib.error.HTTPError) as unauthorized:  # TLS passed; no token
        urllib.request.urlopen(url, timeout=5, context=certificate.client_context())
    assert unauthorized.value.code == 401


def test_plain_http_to_the_https_port_is_answered_400(server: KubernetesApiServer):
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(server.url.replace("https", "http") + "/version", timeout=5)
    assert refused.value.code == 400
    assert refused.value.read() == b"Client sent an HTTP request to an HTTPS server.\n"
