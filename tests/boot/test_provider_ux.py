"""Provider plumbing users meet: environment proxies, custom CA bundles, and the presets."""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fakeprovider import Reply
from tlscerts import make_certificates

from agent.contract.providers import Preset, ProviderError, ProviderSpec
from agent.testing import collect, make_boot, make_session
from plugins_builtin.setup import presets

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY",
                   "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR",
                   "REQUEST_METHOD")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


# ---- a recording proxy ------------------------------------------------------------------------


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (dst, src):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Proxy:
    """An HTTP proxy on 127.0.0.1 that records each request line it relays: ``CONNECT``
    tunnels (https) and absolute-form requests (plain http, sent on with ``Connection:
    close`` so every request arrives on a fresh connection)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def _handle(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(65536)
            if not chunk:
                client.close()
                return
            head += chunk
        head, _, rest = head.partition(b"\r\n\r\n")
        first, *headers = head.decode("latin-1").split("\r\n")
        self.lines.append(first)
        method, target, version = first.split(" ")
        authority, _, path = target.removeprefix("http://").partition("/")
        host, _, port = authority.partition(":")
        if host not in ("127.0.0.1", "localhost") or not port.isdigit():
            # nothing in the tests leaves this machine, and a request this proxy cannot place
            # is answered, not left to raise in its thread (where it surfaces in a later test)
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            client.close()
            return
        upstream = socket.create_connection((host, int(port)))
        if method == "CONNECT":
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            kept = [h for h in headers if not h.lower().startswith(("connection:",
                                                                    "proxy-connection:"))]
            request = "\r\n".join([f"{method} /{path} {version}", *kept, "Connection: close"])
            upstream.sendall(request.encode("latin-1") + b"\r\n\r\n" + rest)
        threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()
        _pipe(upstream, client)

    def close(self) -> None:
        """Stop listening and end the accept thread, then close.

        Closing alone is not enough: a thread blocked in ``accept()`` keeps the closed
        socket listening (the call holds it), and a signal whose handler restarts system
        calls (``SA_RESTART``, as faulthandler's user signals have) makes the kernel issue
        that ``accept()`` again on the same descriptor *number*, which by then names another
        test's socket: the proxy then took a fake provider's connection and never answered
        it, and the request sat there until the 60 s stream deadline.  ``shutdown`` makes the
        blocked ``accept()`` return at once (EINVAL)."""
        try:
            self.server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(timeout=30)
        self.server.close()


@pytest.fixture
def proxy():
    server = Proxy()
    yield server
    server.close()


def test_a_closed_proxy_takes_no_connection_meant_for_a_later_server():
    """The next listener gets the closed proxy's descriptor number (as another test's server
    would), the proxy's accept thread, were it still waiting, gets a signal that restarts
    system calls, and the later listener still receives its own connection."""
    proxy = Proxy()
    number = proxy.server.fileno()
    proxy.close()
    later = socket.create_server(("127.0.0.1", 0))
    duplicated = later.fileno() != number
    if duplicated:
        os.dup2(later.fileno(), number)  # the number now names the later listener too
    with open(os.devnull, "w") as sink:
        faulthandler.register(signal.SIGUSR2, file=sink, all_threads=False)  # SA_RESTART
        try:
            if proxy.thread.is_alive():
                signal.pthread_kill(proxy.thread.ident, signal.SIGUSR2)
            with socket.create_connection(later.getsockname(), timeout=10):
                later.settimeout(10)
                conn, _ = later.accept()  # taken by the proxy's thread: TimeoutError
                conn.close()
        finally:
            faulthandler.unregister(signal.SIGUSR2)
            later.close()
            if duplicated:
                os.close(number)
    assert proxy.lines == []


# ---- a TLS endpoint with its own certificate authority -----------------------------------------


class ModelsHandler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        body = json.dumps({"object": "list", "data": [
            {"id": "tls-model", "object": "model", "created": 0, "owned_by": "test"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def tls_server(tmp_path):
    ca, leaf, key = make_certificates(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(leaf, key)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ModelsHandler)
    httpd.paths = []
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    yield httpd, ca
    httpd.shutdown()
    httpd.server_close()


def boot(tmp_path, provider: str = "openai"):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return make_boot(ws, tmp_path / "home", builtins=[provider])


# ---- proxies -----------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_http_proxy_from_the_environment_carries_model_requests(
        tmp_path, fake_provider, proxy, monkeypatch, provider):
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    config, hooks = boot(tmp_path, provider)
    fake_provider.script(Reply.text("through the proxy"))
    base = fake_provider.openai_url if provider == "openai" else fake_provider.base_url
    session = make_session(config, hooks, provider=provider, base_url=base)
    events = await collect(session, "hi")
    assert events[-1].reason == "end"
    path = "/v1/chat/completions" if provider == "openai" else "/v1/messages"
    assert proxy.lines == [f"POST {fake_provider.base_url}{path} HTTP/1.1"]
    assert fake_provider.paths == [path]


async def test_no_proxy_bypasses_the_proxy(tmp_path, fake_provider, proxy, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    config, hooks = boot(tmp_path)
    fake_provider.script(Reply.text("direct"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    await collect(session, "hi")
    assert proxy.lines == [] and fake_provider.paths == ["/v1/chat/completions"]


async def test_https_proxy_tunnels_and_ssl_cert_file_trusts_a_private_ca(
        tmp_path, tls_server, proxy, monkeypatch):
    httpd, ca = tls_server
    port = httpd.server_address[1]
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    config, hooks = boot(tmp_path)
    session = make_session(config, hooks, base_url=f"https://127.0.0.1:{port}/v1")
    assert await session.runtime.provider.list_models() == ["tls-model"]
    assert proxy.lines == [f"CONNECT 127.0.0.1:{port} HTTP/1.1"]
    assert httpd.paths == ["/v1/models"]


async def test_without_the_ca_bundle_the_private_certificate_is_refused(tmp_path, tls_server):
    httpd, _ = tls_server
    config, hooks = boot(tmp_path)
    session = make_session(config, hooks,
                           base_url=f"https://127.0.0.1:{httpd.server_address[1]}/v1")
    with pytest.raises(ProviderError):
        await session.runtime.provider.list_models()
    assert httpd.paths == []


# ---- presets ------------------------------------------------------------------------------------


def both_providers(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return make_boot(ws, tmp_path / "home", builtins=["openai", "anthropic", "setup"])


def shipped_presets(tmp_path):
    """The provider setup's list as the provider plugins declare it (ProviderSpec.presets)."""
    config, hooks = both_providers(tmp_path)
    return config, presets.offered(hooks.providers(config))


def test_presets_list_the_ten_endpoints_in_order(tmp_path):
    _, offered = shipped_presets(tmp_path)
    assert [p.label for p in offered] == [
        "Anthropic", "OpenAI", "OpenRouter", "Groq", "DeepSeek", "xAI", "Ollama", "LM Studio",
        "Custom OpenAI-compatible", "Custom Anthropic-compatible"]
    assert [p.id for p in offered if p.keyless] == ["ollama", "lmstudio"]
    assert [p.id for p in offered if p.custom] == ["custom-openai", "custom-anthropic"]
    assert all(p.base_url for p in offered if not p.custom)
    assert [p.protocol for p in offered] == ["anthropic"] + ["openai"] * 8 + ["anthropic"]
    assert presets.by_id(offered, "groq").env == "GROQ_API_KEY"
    assert presets.by_id(offered, "anthropic").fallback[0] == "claude-sonnet-4-5"
    assert presets.by_id(offered, "nope") is None


def test_a_provider_plugin_adds_its_own_presets_in_order(tmp_path):
    """Presets are data on ProviderSpec: a third provider's entry lands where its order
    says, and an id an earlier provider (by name) declared is not offered twice."""
    config, hooks = both_providers(tmp_path)
    specs = hooks.providers(config)
    specs["vendor"] = ProviderSpec(name="vendor", create=lambda settings: None, presets=(
        Preset("house", "House gateway", "https://llm.example/v1", order=25),
        Preset("groq", "Another Groq", "https://elsewhere/v1", order=1)))
    offered = presets.offered(specs)
    assert [p.id for p in offered][:3] == ["anthropic", "openai", "house"]
    assert presets.by_id(offered, "house").protocol == "vendor"
    assert presets.by_id(offered, "groq").label == "Groq" and len(offered) == 11


def test_preset_keys_come_from_their_variable_or_are_not_needed(tmp_path):
    _, offered = shipped_presets(tmp_path)
    env = {"GROQ_API_KEY": "gsk_123"}
    assert presets.key_from_env(presets.by_id(offered, "groq"), env) == "gsk_123"
    assert presets.key_from_env(presets.by_id(offered, "xai"), env) is None
    assert presets.key_from_env(presets.by_id(offered, "ollama"), env) == presets.KEYLESS_KEY


def test_current_preset_matches_protocol_and_url(tmp_path):
    config, offered = shipped_presets(tmp_path)
    config.flag_values.update({"provider": "openai", "base_url": "https://api.groq.com/openai/v1"})
    assert presets.current_preset(config, offered) == "groq"
    config.flag_values["base_url"] = "https://example.com/v1"
    assert presets.current_preset(config, offered) == ""
