"""OAuth for a Streamable HTTP server: `agent mcp login` signs in through the server's own
authorisation server (on 127.0.0.1), the token is stored 0600, later runs use it with no
browser, and a headless run without a token says how to sign in.  In process
(``run_agent_here``): the browser the login opens is a real process all the same."""

from __future__ import annotations

import json
import socket
import stat
import sys
import threading
import time

import pytest
from clirun import run_agent_here
from fakeprovider import Reply
from mcp_oauth_server import ApprovingProvider, make_app


@pytest.fixture
def secure():
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
    yield base + "/mcp", provider
    web.should_exit = True
    thread.join(5)


def browser(tmp_path, *, marker=None):
    """A $BROWSER that plays the user: it follows the sign-in URL to the redirect."""
    script = tmp_path / "browser"
    body = (f"open({str(marker)!r}, 'w').close()\n" if marker else
            "import httpx2\nhttpx2.get(sys.argv[1], follow_redirects=True, timeout=30)\n")
    script.write_text(f"#!{sys.executable}\nimport sys\n{body}")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def headless_whoami(fake_provider, home, ws, **env):
    fake_provider.requests.clear()
    fake_provider.script(Reply.tool_call("mcp__secure__whoami", {}, id="w1"), Reply.text("ok"))
    return run_agent_here(["-p", "who am i", "--yolo", "--json", "--provider", "openai",
                           "--base-url", fake_provider.openai_url, "--model", "m"],
                          home=home, cwd=ws, OPENAI_API_KEY="x", **env)


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
    proc = headless_whoami(fake_provider, home, ws, BROWSER=browser(tmp_path, marker=never))
    assert "run agent mcp login secure" in proc.stderr
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
