"""The SDKs' HTTP client (agent.loop.retry.async_http_client) shares one certificate
verification context per process, and still trusts exactly what the environment names at the
time each client is built: SSL_CERT_FILE set, changed, rewritten in place, or unset."""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest
from tlscerts import make_certificates

from agent.loop.retry import async_http_client


class Hello(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "5")
        self.end_headers()
        self.wfile.write(b"hello")


@pytest.fixture
def tls_server(tmp_path):
    """An HTTPS server on 127.0.0.1 whose certificate a private CA signed: (url, ca.pem)."""
    ca, leaf, key = make_certificates(tmp_path / "server")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(leaf, key)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    yield f"https://127.0.0.1:{httpd.server_address[1]}/", ca
    httpd.shutdown()
    httpd.server_close()


async def trusted(url: str) -> bool:
    """Whether a client built now completes a request to ``url`` (False: certificate refused)."""
    async with async_http_client(timeout=10) as client:
        try:
            return (await client.get(url)).text == "hello"
        except httpx2.ConnectError as exc:
            assert "CERTIFICATE_VERIFY_FAILED" in str(exc), exc
            return False


async def test_each_client_trusts_what_ssl_cert_file_names_when_it_is_built(
        tls_server, tmp_path, monkeypatch):
    url, ca = tls_server
    other, _, _ = make_certificates(tmp_path / "other", "another CA")
    bundle = tmp_path / "bundle.pem"
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    assert not await trusted(url)  # the system's bundle does not know the private CA
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    assert await trusted(url)
    assert await trusted(url)  # the second client, from the shared context
    monkeypatch.setenv("SSL_CERT_FILE", str(other))
    assert not await trusted(url)
    bundle.write_bytes(other.read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    assert not await trusted(url)
    bundle.write_bytes(ca.read_bytes())  # the same path, rewritten
    assert await trusted(url)
    monkeypatch.delenv("SSL_CERT_FILE")
    assert not await trusted(url)
    # back to settings seen before (their contexts are kept): each still means what it says
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    assert await trusted(url)
    monkeypatch.setenv("SSL_CERT_FILE", str(other))
    assert not await trusted(url)
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    assert await trusted(url)
    bundle.write_bytes(other.read_bytes())  # rewritten once more
    assert not await trusted(url)
