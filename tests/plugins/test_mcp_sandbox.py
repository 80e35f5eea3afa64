"""MCP stdio servers: a scrubbed environment (no key the agent holds), and ``sandbox = true``
runs one inside the sandbox.  The stub server (tests/mcp_stub.py) reports its own environment
and tries writes and reads; the oracles are what it reports and the files on disk."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agent.testing import make_boot, run_tool
from plugins_builtin.mcp import state

STUB = str(Path(__file__).parents[1].joinpath("mcp_stub.py"))

HELD = {"OPENAI_API_KEY": "sk-openai-held-1111", "ANTHROPIC_API_KEY": "sk-ant-held-2222",
        "AGENT_API_KEY": "sk-agent-held-3333"}
OTHERS = {"GITHUB_TOKEN": "ghp-passed-4444", "CLIENT_SECRET": "cs-5555",
          "STRIPE_API_KEY": "sk-stripe-6666", "AGENT_MODEL": "m",
          "ALIAS_OF_KEY": "sk-openai-held-1111", "INNOCENT_SETTING": "kept-7777"}


def start(tmp: Path, server: dict, **file_data):
    ws = tmp / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    entry = {"command": sys.executable, "args": [STUB, "--probe-tools"], **server}
    saved = dict(os.environ)
    os.environ.update({**HELD, **OTHERS})
    try:
        config, hooks = make_boot(ws, tmp / "home", builtins=["mcp"],
                                  file_data={"mcp_servers": {"stub": entry}, **file_data})
        hooks.tools(config)
        state(config).manager.wait(20)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return config, hooks


async def call(config, name, args=None):
    st = state(config)
    definition = next(t for t in st.manager.tools["stub"] if t["name"] == name)
    return (await run_tool(st.factory.tool("stub", definition), args or {}, config)).output


async def test_a_server_inherits_no_key_the_agent_holds(tmp_path):
    config, hooks = start(tmp_path, {"env": {"GIVEN_TOKEN": "given-8888"},
                                     "env_passthrough": ["GITHUB_TOKEN"]},
                          api_key="sk-config-held-9999")
    try:
        env = json.loads(await call(config, "environ"))
    finally:
        hooks.unconfigure(config)
    text = json.dumps(env)
    for secret in (*HELD.values(), "cs-5555", "sk-stripe-6666"):
        assert secret not in text
    assert not [k for k in env if k.startswith("AGENT_")]
    assert env["GITHUB_TOKEN"] == "ghp-passed-4444"  # env_passthrough keeps it
    assert env["GIVEN_TOKEN"] == "given-8888"  # the server's own env is its to have
    assert env["INNOCENT_SETTING"] == "kept-7777"
    assert "ALIAS_OF_KEY" not in env  # a held key under another name is a held key


async def test_sandbox_true_runs_the_server_inside_the_walls(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("original\n")
    (tmp_path / "ws").mkdir()
    # Hidden paths are decided when the server starts (a long-running process keeps its
    # walls): the secret exists before, as it would.
    (tmp_path / "ws" / ".env").write_text("DB=sk-dotenv-secret\n")
    config, hooks = start(tmp_path, {"sandbox": True})
    ws = config.workspace
    try:
        assert await call(config, "write", {"path": str(ws / "made.txt"), "text": "ok"}) \
            == "wrote"
        refused = await call(config, "write", {"path": str(outside), "text": "pwned"})
        home_file = await call(config, "write", {"path": "/var/tmp/mcp-sandbox-probe",
                                                 "text": "x"})
        secret = await call(config, "read", {"path": str(ws / ".env")})
        env = json.loads(await call(config, "environ"))
    finally:
        hooks.unconfigure(config)
    assert (ws / "made.txt").read_text() == "ok"
    assert outside.read_text() == "original\n" and refused.startswith(("failed", "wrote"))
    assert home_file.startswith("failed") and "Read-only file system" in home_file
    assert not Path("/var/tmp/mcp-sandbox-probe").exists()
    assert "sk-dotenv-secret" not in secret
    assert env["TMPDIR"] == "/tmp"


async def test_sandbox_true_without_a_sandbox_refuses_to_start_the_server(tmp_path):
    pidfile = tmp_path / "started.pid"
    config, hooks = start(tmp_path, {"sandbox": True, "args": [STUB, "--pidfile",
                                                               str(pidfile), "--probe-tools"]},
                          sandbox_bwrap="/bin/false")
    try:
        conn = state(config).manager.conns["stub"]
        assert conn.state == "failed"
        assert "sandbox = true, but the sandbox cannot start here" in conn.error
    finally:
        hooks.unconfigure(config)
    assert not pidfile.exists()  # the server never ran


@pytest.mark.parametrize("value,problem", [
    ("yes", 'sandbox must be true, false, "workspace-write" or "read-only"'),
    (None, None),
])
def test_server_sandbox_values_are_checked(value, problem):
    from plugins_builtin.mcp.servers import parse_servers

    table = {"command": "x"} if value is None else {"command": "x", "sandbox": value}
    server = parse_servers({"s": table})["s"]
    if problem:
        assert server.problem.startswith(problem)
    else:
        assert not server.problem and server.sandbox == ""
    read_only = parse_servers({"s": {"command": "x", "sandbox": "read-only",
                                     "env_passthrough": ["A"]}})["s"]
    assert read_only.sandbox == "read-only" and read_only.env_passthrough == ("A",)


async def test_a_server_without_env_gets_no_credential_by_name_or_value(tmp_path, monkeypatch):
    """The issue's examples: a URL with a password, a PAT, npm's auth, cloud keys.  Only the
    server's own env_passthrough brings one back; shell_env's include is for commands, its
    exclude applies to servers too."""
    leaks = {"DATABASE_URL": "postgres://admin:mcp-leak-01@db/app", "GH_PAT": "mcp-leak-02",
             "NPM_CONFIG__AUTH": "mcp-leak-03", "AWS_ACCESS_KEY_ID": "mcp-leak-04",
             "SESSION_COOKIE": "mcp-leak-05", "PLAIN_BUT_EXCLUDED": "mcp-leak-06"}
    for name, value in {**leaks, "PASSED_PAT": "passed-through"}.items():
        monkeypatch.setenv(name, value)
    config, hooks = start(tmp_path, {"env_passthrough": ["PASSED_PAT"]},
                          shell_env={"include": ["GH_PAT"], "exclude": ["PLAIN_BUT_*"]})
    try:
        env = json.loads(await call(config, "environ"))
    finally:
        hooks.unconfigure(config)
    assert "mcp-leak-" not in json.dumps(env)
    assert env["PASSED_PAT"] == "passed-through"
    assert env["PATH"] == os.environ["PATH"]
