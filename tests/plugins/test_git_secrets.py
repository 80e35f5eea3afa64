"""Committed secrets never come back through the git tools: diffs lose the sections of secret
files (with a note), and a secret path or a bare blob is refused."""

from __future__ import annotations

import os
import shutil

import pytest
from fakeprovider import Reply
from hostile_repos import git

from agent.contract import events as ev
from agent.testing import collect, make_boot, make_session, run_tool

CANARY = "GITCANARY-93b1"
SECRETS = {".env": "dotenv", "sub/.ENV": "upper", "conf/.env/prod.json": "envdir",
           "deploy/id_rsa": "sshkey", "a/b/credentials.json": "nested"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The repository, built once for the module (a dozen git commands); each test gets a
    copy of it (``repo``): some tests add tags and config."""
    ws = tmp_path_factory.mktemp("git_secrets") / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / "app.py").write_text("print('hello')\n")
    for rel, tag in SECRETS.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(f"{CANARY}-{tag}-v1\n")
    os.symlink(".env", ws / "settings.cfg")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "add config")
    for rel, tag in SECRETS.items():
        (ws / rel).write_text(f"{CANARY}-{tag}-v2\n")
    (ws / "app.py").write_text("print('hello, world')\n")
    git(ws, "commit", "-q", "-am", "rotate keys")
    for rel, tag in SECRETS.items():
        (ws / rel).write_text(f"{CANARY}-{tag}-v3\n")   # staged
    (ws / "app.py").write_text("print('staged')\n")
    git(ws, "add", "-A")
    for rel, tag in SECRETS.items():
        (ws / rel).write_text(f"{CANARY}-{tag}-v4\n")   # unstaged
    (ws / "app.py").write_text("print('bye')\n")
    return ws


@pytest.fixture
def repo(tmp_path, built):
    ws = tmp_path / "ws"
    shutil.copytree(built, ws, symlinks=True)  # nothing in it names its own path
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["git", "openai"])
    return ws, config, hooks, hooks.tools(config)


@pytest.fixture(scope="module")
def shared(tmp_path_factory, built):
    """One copy and one booted host for the tests that only read it (git under the
    read-only sandbox, or a refusal before git runs): each still asserts on its own call."""
    ws = tmp_path_factory.mktemp("git_secrets_shared") / "ws"
    shutil.copytree(built, ws, symlinks=True)
    config, hooks = make_boot(ws, ws.parent / "home", builtins=["git", "openai"])
    return ws, config, hooks, hooks.tools(config)


SHOWN = [
    ("git_show", {"ref": "HEAD"}), ("git_show", {"ref": "HEAD~1"}),
    ("git_diff", {}), ("git_diff", {"staged": True}),
    ("git_log", {"patch": True}), ("git_log", {"patch": True, "limit": 1}),
]


@pytest.mark.parametrize("tool,args", SHOWN)
async def test_diffs_leave_secret_files_out_and_say_so(shared, tool, args):
    _, config, _, tools = shared
    result = await run_tool(tools[tool], args, config)
    assert not result.is_error, result.output
    assert CANARY not in result.output
    assert "app.py" in result.output            # the rest of the change is still there
    assert "[secrets policy: changes to secret files are not shown: " in result.output
    assert ".env" in result.output


REFUSED = [
    ("git_show", {"ref": "HEAD:.env"}), ("git_show", {"ref": "HEAD:./sub/../.ENV"}),
    ("git_show", {"ref": "HEAD~1:conf/.env/prod.json"}), ("git_show", {"ref": ":0:.env"}),
    ("git_show", {"ref": "HEAD", "path": "deploy/id_rsa"}),
    ("git_show", {"ref": "HEAD:settings.cfg"}),   # the link on disk leads to .env
    ("git_diff", {"path": ".env"}), ("git_diff", {"path": "conf/.env"}),
    ("git_blame", {"path": ".env"}), ("git_blame", {"path": "settings.cfg"}),
    ("git_blame", {"path": "a/b/credentials.json"}),
    ("git_log", {"patch": True, "path": "sub/.ENV"}),
]


@pytest.mark.parametrize("tool,args", REFUSED)
async def test_a_secret_path_is_refused(shared, tool, args):
    _, config, _, tools = shared
    result = await run_tool(tools[tool], args, config)
    assert result.is_error and "refusing to show" in result.output, result.output
    assert CANARY not in result.output


async def test_a_blob_without_its_path_is_refused(repo):
    ws, config, _, tools = repo
    blob = git(ws, "rev-parse", "HEAD:.env").stdout.strip()
    git(ws, "tag", "-a", "-m", "a tag on a blob", "blobtag", blob)
    git(ws, "config", "core.logAllRefUpdates", "always")
    git(ws, "update-ref", "refs/tags/logged", blob)        # a tag with a reflog entry
    for ref in (blob, blob[:10], "blobtag", "blobtag^{blob}", "logged@{0}",
                "logged@{2099-01-01 10:00:00}"):
        result = await run_tool(tools["git_show"], {"ref": ref}, config)
        assert result.is_error and "rev:path" in result.output, result.output
        assert CANARY not in result.output
    plain = await run_tool(tools["git_show"], {"ref": "HEAD:app.py"}, config)
    assert "hello, world" in plain.output


async def test_secrets_allow_opens_a_path_in_git_too(repo, tmp_path):
    ws, _, _, _ = repo
    config, hooks = make_boot(ws, tmp_path / "home2", builtins=["git"],
                              file_data={"secrets_allow": [".env"]})
    tools = hooks.tools(config)
    result = await run_tool(tools["git_show"], {"ref": "HEAD:.env"}, config)
    assert f"{CANARY}-dotenv-v2" in result.output
    diff = await run_tool(tools["git_diff"], {}, config)
    assert f"{CANARY}-dotenv-v4" in diff.output and f"{CANARY}-sshkey" not in diff.output


async def test_the_commit_message_model_never_sees_a_staged_secret(repo, fake_provider):
    _, config, hooks, _ = repo
    fake_provider.script(Reply.tool_call("git_commit_message", {}, id="g1"),
                         Reply.text("Rotate the keys"), Reply.text("done"))
    events = await collect(make_session(config, hooks, base_url=fake_provider.openai_url),
                           "suggest a message")
    result = next(e for e in events if isinstance(e, ev.ToolResultEvent))
    assert result.output == "Rotate the keys"
    assert all(CANARY not in r.raw.decode() for r in fake_provider.requests)
    assert "app.py" in fake_provider.requests[1].raw.decode()  # the rest of the diff went


async def test_the_guard_sees_the_path_inside_a_ref(repo):
    from agent.testing import gate_decision

    ws, _, _, _ = repo
    config, hooks = make_boot(ws, ws.parent / "home3", builtins=["git", "secrets"])
    show = hooks.tools(config)["git_show"]
    assert show.effects({"ref": "HEAD~1:conf/.env/prod.json"}).reads == (
        ".", "conf/.env/prod.json")
    assert show.effects({"ref": ":0:app.py"}).reads == (".", "app.py")
    assert show.effects({"ref": "HEAD@{2099-01-01 10:00}"}).reads == (".",)
    assert show.effects({"ref": ":/fix"}).reads == (".",)   # a commit message search
    decision = await gate_decision(config, hooks, show, {"ref": "HEAD:.ENV"})
    assert not decision.allowed and decision.source == "secrets"
