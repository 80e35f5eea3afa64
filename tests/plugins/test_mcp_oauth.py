"""OAuth for a Streamable HTTP server: `agent mcp login` signs in through the server's own
authorisation server (on 127.0.0.1), the token is stored 0600, later runs use it with no
browser, and a headless run without a token says how to sign in.  In process
(``run_agent_here``): the browser the login opens is a real process all the same."""

from __future__ import annotations

import contextlib
import json
import socket
import socketserver
import stat
import sys
import threading
import time

import pytest
from clirun import run_agent, run_agent_here
from fakeprovider import Reply
from mcp_oauth_server import ApprovingProvider, make_app


@contextlib.contextmanager
def serving():
    """An OAuth-protected MCP server on a port of its own: (its URL, its provider)."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = ApprovingProvider()
    web = uvicorn.Server(uvicorn.Config(make_app(base, provider), log_level="warning"))
    thread = threading.Thread(target=web.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not web.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield base + "/mcp", provider
    finally:
        web.should_exit = True
        thread.join(5)


@pytest.fixture
def secure():
    with serving() as found:
        yield found


def browser(tmp_path, *, marker=None):
    """A $BROWSER that plays the user: it follows the sign-in URL to the redirect."""
    script = tmp_path / "browser"
    body = (f"open({str(marker)!r}, 'w').close()\n" if marker else
            "import httpx2\nhttpx2.get(sys.argv[1], follow_redirects=True, timeout=30)\n")
    script.write_text(f"#!{sys.executable}\nimport sys\n{body}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


WHOAMI = ["-p", "who am i", "--yolo", "--json", "--provider", "openai", "--model", "m"]


def headless_whoami(fake_provider, home, ws, **env):
    """A headless run calling the server's whoami."""
    fake_provider.requests.clear()
    fake_provider.script(Reply.tool_call("mcp__secure__whoami", {}, id="w1"), Reply.text("ok"))
    return run_agent_here([*WHOAMI, "--base-url", fake_provider.openai_url], home=home, cwd=ws,
                          OPENAI_API_KEY="x", **env)


def headless_whoami_process(fake_provider, home, ws, **env):
    """:func:`headless_whoami` as a new interpreter, where whatever reaches stderr (a logged
    traceback included) is what a user sees."""
    fake_provider.requests.clear()
    fake_provider.script(Reply.tool_call("mcp__secure__whoami", {}, id="w1"), Reply.text("ok"))
    return run_agent([*WHOAMI, "--base-url", fake_provider.openai_url], home=home, cwd=ws,
                     OPENAI_API_KEY="x", **env)


@pytest.mark.e2e  # the headless run without a token is a process of its own
def test_login_then_token_reuse_and_headless_without_a_token(secure, tmp_path, fake_provider,
                                                            monkeypatch):
    import webbrowser

    # webbrowser reads $BROWSER once per process, at its first use: start from that state,
    # as a new agent process would, whatever ran in this one before.
    monkeypatch.setattr(webbrowser, "_tryorder", None)
    url, provider = secure
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    home.mkdir()
    (home / "config.toml").write_text(
        f'mcp_startup_timeout = 120\n[mcp_servers.secure]\nurl = "{url}"\nauth = "oauth"\n')
    never = tmp_path / "browser-opened"

    # Headless with no token: no browser, and the failure says how to sign in.
    proc = headless_whoami_process(fake_provider, home, ws,
                                   BROWSER=browser(tmp_path, marker=never))
    assert "run agent mcp login secure" in proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr  # the hint alone, no Python trace
    assert "OAuth flow error" in (home / "state" / "agent.log").read_text()  # kept, in the log
    assert not never.exists() and provider.authorized == 0

    user = tmp_path / "user"
    user.mkdir()
    login = run_agent_here(["mcp", "login", "secure"], home=home, cwd=ws,
                           BROWSER=browser(user))
    assert login.returncode == 0, login.stderr
    assert "Sign in to the MCP server secure: " in login.stderr
    assert provider.authorized == 1
    token_file = home / "state" / "mcp" / "oauth" / "secure.json"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(token_file.parent.stat().st_mode) == 0o700
    assert json.loads(token_file.read_text())["tokens"]["access_token"]

    # Later runs use the saved token: the tool answers, no browser opens.
    proc = headless_whoami(fake_provider, home, ws, BROWSER=browser(tmp_path, marker=never))
    assert proc.returncode == 0, proc.stderr
    result = next(json.loads(line) for line in proc.stdout.splitlines()
                  if json.loads(line)["type"] == "tool-result")
    assert result["output"] == "hello, signed-in client"
    assert not never.exists() and provider.authorized == 1


def configure(home, url):
    (home / "config.toml").write_text(
        f'mcp_startup_timeout = 120\n[mcp_servers.secure]\nurl = "{url}"\nauth = "oauth"\n')


def sign_in(tmp_path, home, ws, url) -> str:
    """``agent mcp login secure`` against ``url``; the access token it saved."""
    import webbrowser

    configure(home, url)
    user = tmp_path / "user"
    user.mkdir(exist_ok=True)
    webbrowser._tryorder = None  # as a new process: $BROWSER is read afresh
    login = run_agent_here(["mcp", "login", "secure"], home=home, cwd=ws, BROWSER=browser(user))
    assert login.returncode == 0, login.stderr
    saved = json.loads((home / "state" / "mcp" / "oauth" / "secure.json").read_text())
    return saved["tokens"]["access_token"]


@pytest.fixture
def signed_in(secure, tmp_path, monkeypatch):
    import webbrowser

    monkeypatch.setattr(webbrowser, "_tryorder", None)
    url, provider = secure
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    home.mkdir()
    token = sign_in(tmp_path, home, ws, url)
    assert any(token in header for _, header in provider.presented)  # it does get used
    return url, provider, home, ws, token


def test_a_token_never_follows_the_server_name_to_another_origin(signed_in, tmp_path,
                                                                 fake_provider):
    url, _, home, ws, token = signed_in
    never = tmp_path / "browser-opened"
    with serving() as (other_url, other):
        configure(home, other_url)  # same name, another server
        proc = headless_whoami(fake_provider, home, ws, BROWSER=browser(tmp_path, marker=never))
        assert not any(token in header for _, header in other.presented)
        assert other.presented == []  # no stale credential of any kind
        assert "needs you to sign in again" in proc.stderr
        assert f"the saved sign-in was for {url}" in proc.stderr
        assert "run agent mcp login secure" in proc.stderr
        assert not never.exists()
        # Signing in again binds a new token to the new server, which then works.
        new_token = sign_in(tmp_path, home, ws, other_url)
        assert new_token != token and other.authorized == 1
        proc = headless_whoami(fake_provider, home, ws, BROWSER=browser(tmp_path, marker=never))
        assert proc.returncode == 0, proc.stderr
        assert "hello, signed-in client" in proc.stdout
        assert not any(token in header for _, header in other.presented)


def test_a_token_is_not_sent_to_another_path_of_the_same_origin(signed_in, tmp_path,
                                                                fake_provider):
    url, provider, home, ws, token = signed_in
    moved = url.replace("/mcp", "/elsewhere/mcp")
    configure(home, moved)
    proc = headless_whoami(fake_provider, home, ws,
                           BROWSER=browser(tmp_path, marker=tmp_path / "opened"))
    assert not [path for path, header in provider.presented
                if token in header and path != "/mcp"]
    assert proc.returncode == 0, proc.stderr


class _Recorder(socketserver.ThreadingTCPServer):
    """A forward proxy on 127.0.0.1 that records each request's head and answers 502: where
    a plain-http request to a remote host would go, without leaving this machine."""

    daemon_threads = True
    heads: list[bytes]


class _RecordHead(socketserver.StreamRequestHandler):
    def handle(self):
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            line = self.rfile.readline()
            if not line:
                break
            head += line
        self.server.heads.append(head)
        self.wfile.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n"
                         b"Connection: close\r\n\r\n")


def test_a_token_is_never_sent_over_plain_http_to_a_remote_host(tmp_path, fake_provider):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    home.mkdir()
    remote = "http://mcp.remote.example/mcp"
    configure(home, remote)
    # A token saved for exactly this URL (bound to it), as a sign-in could have left it.
    folder = home / "state" / "mcp" / "oauth"
    folder.mkdir(parents=True)
    (folder / "secure.json").write_text(json.dumps({
        "bound": {"origin": "http://mcp.remote.example",
                  "resource": "http://mcp.remote.example/mcp"},
        "tokens": {"access_token": "planted-remote-token", "token_type": "Bearer",
                   "expires_in": 3600}}))
    proxy = _Recorder(("127.0.0.1", 0), _RecordHead)
    proxy.heads = []
    thread = threading.Thread(target=proxy.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        address = f"http://127.0.0.1:{proxy.server_address[1]}"
        proc = headless_whoami(fake_provider, home, ws, HTTP_PROXY=address, http_proxy=address,
                               NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    finally:
        proxy.shutdown()
        thread.join(5)
        proxy.server_close()
    assert not any(b"planted-remote-token" in head for head in proxy.heads)
    assert "needs an https URL (or a loopback address)" in proc.stderr


@pytest.mark.parametrize("url,origin,resource", [
    ("https://Example.COM:443/mcp", "https://example.com", "https://example.com/mcp"),
    ("https://example.com:8443/mcp/", "https://example.com:8443",
     "https://example.com:8443/mcp/"),
    ("http://127.0.0.1:9000/mcp#frag", "http://127.0.0.1:9000", "http://127.0.0.1:9000/mcp"),
    ("http://[::1]:80/x?a=1", "http://[::1]", "http://[::1]/x?a=1"),
])
def test_binding_is_origin_and_resource(url, origin, resource):
    from plugins_builtin.mcp.oauth import binding

    assert binding(url) == {"origin": origin, "resource": resource}


@pytest.mark.parametrize("url,ok", [
    ("https://example.com/mcp", True), ("http://127.0.0.1:1/mcp", True),
    ("http://localhost:1/mcp", True), ("http://[::1]:1/mcp", True),
    ("http://127.9.9.9/mcp", True), ("http://example.com/mcp", False),
    ("http://10.0.0.1/mcp", False), ("ftp://example.com/mcp", False),
    ("http://localhost.example.com/mcp", False),
])
def test_tokens_go_over_https_or_to_loopback_only(url, ok):
    from plugins_builtin.mcp.oauth import transport_problem

    assert (transport_problem(url) is None) is ok
