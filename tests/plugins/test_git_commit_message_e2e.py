"""git_commit_message end to end: a nested model call through the real provider plugin."""

from __future__ import annotations

import subprocess

from fakeprovider import Reply

from agent.contract import events as ev
from agent.testing import collect, make_boot, make_session


def git(ws, *args):
    return subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True,
                          text=True).stdout


async def test_commit_message_comes_from_a_nested_model_call_and_nothing_is_committed(
        tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    git(ws, "-c", "user.email=a@b", "-c", "user.name=A", "commit", "-q", "--allow-empty",
        "-m", "Initial commit")
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git(ws, "add", "calc.py")
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "git"])
    fake_provider.script(
        Reply.tool_call("git_commit_message", {}, id="g1"),
        Reply.text("```\nAdd an add() helper to calc.py\n```"),   # the nested request
        Reply.text("Suggested: Add an add() helper to calc.py"))
    events = await collect(make_session(config, hooks, base_url=fake_provider.openai_url),
                           "suggest a commit message")
    result = next(e for e in events if isinstance(e, ev.ToolResultEvent))
    assert result.output == "Add an add() helper to calc.py"
    nested = fake_provider.requests[1].body
    assert "tools" not in nested or not nested["tools"]
    nested_text = str(nested["messages"])
    assert "def add(a, b)" in nested_text and "Initial commit" in nested_text
    assert git(ws, "log", "--format=%s").splitlines() == ["Initial commit"]  # never commits
    assert "calc.py" in git(ws, "diff", "--cached", "--name-only")
