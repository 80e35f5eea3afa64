"""The secrets policy on every read path: file tools, grep (both engines), symlinks, allows.

The oracle is the canary: a string that only exists inside a secret file must never show up in
what a tool returns (the text the model would receive).
"""

from __future__ import annotations

import os

import pytest
from secret_fixtures import CANARY, secret_tree

from agent.contain.secrets import SecretsPolicy, find_secret_paths
from agent.contract.messages import Message, TextPart, ToolCallPart
from agent.contract.providers import StepFinished, Usage
from agent.loop.session import Runtime, Session
from agent.testing import make_boot, run_tool


@pytest.fixture
def env(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    secret_tree(ws)
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["files", "secrets", "protect"])
    return config, hooks, hooks.tools(config)


# ---- the policy itself --------------------------------------------------------------------

def test_policy_judges_the_written_path_and_where_links_lead(env):
    config, _, _ = env
    policy = SecretsPolicy(config.workspace)
    for path in (".env", "sub/.ENV", "conf/.env/prod.json", "notes.txt", "settings.cfg",
                 "configdir/prod.json", "./x/../.env", str(config.workspace / ".env")):
        assert policy.is_secret(path), path
    for path in ("main.py", ".env.example", ".gitignore", "conf"):
        assert not policy.is_secret(path), path
    verdict = policy.check("notes.txt")
    assert verdict.spelling == "deploy/id_rsa"
    assert "it leads to deploy/id_rsa" in verdict.message()


def test_a_link_to_a_secret_outside_the_workspace_is_secret(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text("Host x\n")
    os.symlink(tmp_path / ".ssh" / "config", ws / "harmless.txt")
    assert SecretsPolicy(ws).is_secret("harmless.txt")


def test_allow_opens_only_the_spelling_it_names(env):
    config, _, _ = env
    allowing_link = SecretsPolicy(config.workspace, allow=["settings.cfg"])
    assert allowing_link.is_secret("settings.cfg")  # the target .env is still not allowed
    allowing_target = SecretsPolicy(config.workspace, allow=[".env"])
    assert not allowing_target.is_secret("settings.cfg")
    assert not allowing_target.is_secret(".ENV")  # allow globs are case-insensitive too
    assert allowing_target.is_secret("sub/.ENV")


def test_find_secret_paths_lists_what_the_sandbox_must_hide(env):
    config, _, _ = env
    ws = config.workspace
    found = {os.path.relpath(p, ws) for p in find_secret_paths(ws)}
    assert found == {".env", "sub/.ENV", "conf/.env", "a/b/c/credentials.json",
                     "deploy/id_rsa", ".env.local"}


# ---- the file tools, with and without the guard ---------------------------------------------

SECRET_READS = [".env", "sub/.ENV", "conf/.env/prod.json", "a/b/c/credentials.json",
                "notes.txt", "settings.cfg", "configdir/prod.json", ".env.local"]


@pytest.mark.parametrize("path", SECRET_READS)
async def test_read_file_refuses_every_secret_even_without_the_guard(env, path):
    config, _, tools = env
    result = await run_tool(tools["read_file"], {"path": path}, config)
    assert result.is_error and "refusing to read" in result.output
    assert CANARY not in result.output


async def test_read_many_files_refuses_each_secret_and_reads_the_rest(env):
    config, _, tools = env
    files = [{"path": "main.py"}] + [{"path": p} for p in SECRET_READS]
    result = await run_tool(tools["read_many_files"], {"files": files}, config)
    assert "CANARY-PUBLIC marker" in result.output
    assert CANARY not in result.output
    assert result.output.count("refusing to read") == len(SECRET_READS)


@pytest.mark.parametrize("fallback", [False, True], ids=["rg", "python"])
@pytest.mark.parametrize("ignored", [False, True], ids=["default", "includeIgnored"])
async def test_grep_never_opens_a_secret_and_says_so(tmp_path, fallback, ignored):
    ws = tmp_path / "ws"
    ws.mkdir()
    secret_tree(ws)
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["files"],
                              file_data={"grep_fallback": fallback})
    args = {"pattern": "CANARY", "includeIgnored": ignored}
    result = await run_tool(hooks.tools(config)["grep"], args, config)
    assert "main.py:1: # CANARY-PUBLIC" in result.output
    assert ".env.example:1:" in result.output
    assert CANARY not in result.output
    assert "not searched (secrets policy)" in result.output
    assert ".env" in result.output.splitlines()[-1]
    for glob in (".env", "**/.ENV", "conf/**", "*.txt"):
        narrowed = await run_tool(hooks.tools(config)["grep"],
                                  {"pattern": "CANARY", "include": glob,
                                   "includeIgnored": ignored}, config)
        assert CANARY not in narrowed.output, glob


async def test_secrets_allow_opens_a_path_for_the_tools(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    secret_tree(ws)
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["files"],
                              file_data={"secrets_allow": ["sub/.env"]})
    tools = hooks.tools(config)
    opened = await run_tool(tools["read_file"], {"path": "sub/.ENV"}, config)
    assert f"{CANARY}-upper" in opened.output
    still = await run_tool(tools["read_file"], {"path": ".env"}, config)
    assert still.is_error
    found = await run_tool(tools["grep"], {"pattern": "CANARY"}, config)
    assert f"{CANARY}-upper" in found.output and f"{CANARY}-dotenv" not in found.output


# ---- through the gate of a real session -----------------------------------------------------

class Scripted:
    """A provider stand-in that asks for the given calls, then says done."""

    label = "scripted"

    def __init__(self, calls):
        self.replies = [Message("assistant", [ToolCallPart(f"c{i}", name, args)
                                              for i, (name, args) in enumerate(calls)]),
                        Message("assistant", [TextPart("done")])]
        self.requests = []

    async def stream(self, request):
        self.requests.append(request)
        yield StepFinished(self.replies.pop(0), Usage())


async def run_calls(config, hooks, calls):
    provider = Scripted(calls)

    async def approve(request):
        return "yes"

    session = Session(Runtime(config, hooks, hooks.tools(config), provider, approver=approve))
    return [e async for e in session.run("go")]


async def test_the_guard_refuses_secret_reads_and_writes_through_links(env):
    config, hooks, _ = env
    ws = config.workspace
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    os.symlink(".git/config", ws / "gitconf.txt")
    calls = [("read_file", {"path": "settings.cfg"}),
             ("read_many_files", {"files": [{"path": "main.py"}, {"path": "notes.txt"}]}),
             ("write_file", {"path": "settings.cfg", "content": "pwned"}),
             ("write_file", {"path": "gitconf.txt", "content": "pwned"}),
             ("write_file", {"path": ".GIT", "content": "gitdir: /tmp/elsewhere"}),
             ("write_file", {"path": "sub/.git", "content": "gitdir: /tmp/elsewhere"})]
    events = await run_calls(config, hooks, calls)
    denied = {e.id: e for e in events if e.type == "tool-denied"}
    assert sorted(denied) == ["c0", "c1", "c2", "c3", "c4", "c5"]
    assert "leads to .env" in str(denied["c2"].__dict__)
    assert (ws / ".env").read_text() == f"TOKEN={CANARY}-dotenv\n"
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert not (ws / ".GIT").exists() and not (ws / "sub" / ".git").exists()


async def test_a_project_rule_cannot_open_a_secret(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    secret_tree(ws)
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["files", "secrets"])
    config.project_permission = {"read_file": "allow"}
    events = await run_calls(config, hooks, [("read_file", {"path": ".env"})])
    assert [e.type for e in events if e.type.startswith("tool-")][-1] == "tool-denied"
    assert CANARY not in str([e.__dict__ for e in events])
