"""TLS (with client certificates) and bearer-token authentication on both receivers, with
certificates generated here (``cryptography``): the right token over a verified channel is
accepted, a wrong or missing token is refused before anything is held, a client without a
certificate cannot connect at all."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import socket
import ssl
import time
from pathlib import Path

import grpc
import httpx
import pytest

from tests.e2e.otlp_receiver import GrpcOtlpReceiver
from tests.service.support import ServeProcess, grpc_export, running, wait_for
from tests.service.traffic import agent_spans, request_of, trace_id_of

cryptography = pytest.importorskip("cryptography")

from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

TOKEN = "9f1c-test-token"


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Certificate | None,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    server: bool = False,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer.subject if issuer is not None else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA, a server certificate for localhost/127.0.0.1 and a client certificate."""
    folder = tmp_path_factory.mktemp("pki")
    ca_key = _key()
    ca = _cert("semloop test CA", ca_key, None, ca_key, ca=True)
    server_key, client_key = _key(), _key()
    files = {
        "ca": ca.public_bytes(serialization.Encoding.PEM),
        "server": _cert("localhost", server_key, ca, ca_key, server=True).public_bytes(
            serialization.Encoding.PEM
        ),
        "server_key": _pem_key(server_key),
        "client": _cert("sender", client_key, ca, ca_key).public_bytes(serialization.Encoding.PEM),
        "client_key": _pem_key(client_key),
    }
    paths = {}
    for name, data in files.items():
        path = folder / f"{name}.pem"
        path.write_bytes(data)
        paths[name] = path
    return paths


def test_tls_with_client_certificates_and_a_bearer_token_on_both_receivers(pki: dict[str, Path]) -> None:
    with (
        GrpcOtlpReceiver() as downstream,
        running(
            downstream,
            tls_certificate=str(pki["server"]),
            tls_key=str(pki["server_key"]),
            tls_client_ca=str(pki["ca"]),
            auth_token=TOKEN,
        ) as service,
    ):
        credentials = grpc.ssl_channel_credentials(
            root_certificates=pki["ca"].read_bytes(),
            private_key=pki["client_key"].read_bytes(),
            certificate_chain=pki["client"].read_bytes(),
        )
        good = request_of(agent_spans(trace_id_of(11, 0), 2, loop=False))
        # gRPC: wrong token, no token -> UNAUTHENTICATED; the right one -> OK.
        for token in ("wrong-token", None):
            with pytest.raises(grpc.RpcError) as refused:
                grpc_export(service.grpc_port, good, token=token, credentials=credentials)
            assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
        grpc_export(service.grpc_port, good, token=TOKEN, credentials=credentials)
        # gRPC without a client certificate: the handshake fails.
        no_cert = grpc.ssl_channel_credentials(root_certificates=pki["ca"].read_bytes())
        with pytest.raises(grpc.RpcError) as handshake:
            grpc_export(service.grpc_port, good, token=TOKEN, credentials=no_cert, timeout=3)
        assert handshake.value.code() is grpc.StatusCode.UNAVAILABLE

        url = f"https://127.0.0.1:{service.http_port}/v1/traces"
        body = request_of(agent_spans(trace_id_of(11, 1), 2, loop=False)).SerializeToString()
        with_cert = ssl.create_default_context(cafile=str(pki["ca"]))
        with_cert.load_cert_chain(str(pki["client"]), str(pki["client_key"]))
        with httpx.Client(verify=with_cert) as client:
            headers = {"Content-Type": "application/x-protobuf"}
            wrong = client.post(url, content=body, headers={**headers, "Authorization": "Bearer nope"})
            assert wrong.status_code == 401 and wrong.headers["www-authenticate"].startswith("Bearer")
            assert client.post(url, content=body, headers=headers).status_code == 401
            ok = client.post(url, content=body, headers={**headers, "Authorization": f"Bearer {TOKEN}"})
            assert ok.status_code == 200
        with (
            httpx.Client(verify=ssl.create_default_context(cafile=str(pki["ca"]))) as anonymous,
            pytest.raises((httpx.TransportError, httpx.RemoteProtocolError)),
        ):
            anonymous.post(url, content=body, headers={**headers, "Authorization": f"Bearer {TOKEN}"})
        with httpx.Client(verify=True) as unverified, pytest.raises(httpx.TransportError):
            unverified.post(url, content=body)  # the test CA is not a system root

        # Exactly the two accepted requests arrived, nothing of the refused ones.
        wait_for(lambda: len(downstream.spans) >= 10, 10, "10 spans downstream")
        assert sorted({s.trace_id for s in downstream.spans}) == sorted(
            [trace_id_of(11, 0).hex(), trace_id_of(11, 1).hex()]
        )
        assert len(downstream.spans) == 10
        stats = service.stats()
        assert stats["requests.refused.unauthenticated"] == 4


def test_failed_tls_handshakes_do_not_write_a_line_each(pki: dict[str, Path]) -> None:
    process = ServeProcess(
        "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0", "--export-endpoint", "http://127.0.0.1:9",
        "--tls-certificate", str(pki["server"]), "--tls-key", str(pki["server_key"]),
    )  # fmt: skip
    try:
        grpc_port, _ = process.wait_listening()
        wait_for(lambda: "options:" in process.log, 10, "the start-up lines")
        before = len(process.lines)
        for _ in range(50):  # plaintext where TLS is expected: each handshake fails
            with socket.create_connection(("127.0.0.1", grpc_port)) as sock:
                sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                sock.settimeout(2)
                with contextlib.suppress(OSError):
                    sock.recv(1024)
        time.sleep(0.5)
        during = process.lines[before:]
    finally:
        process.stop()
    assert len(during) <= 1, "".join(during)
