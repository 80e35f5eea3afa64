"""Claude Code's headless spellings work as people type them: --permission-mode acceptEdits and
bypassPermissions, --allowedTools / --disallowedTools in its rule syntax."""

from __future__ import annotations

import json

from clirun import run_agent_here
from fakeprovider import Reply


def _run(tmp_path, fake_provider, *args, **env):
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws, run_agent_here(["-p", "go", "--output-format", "stream-json", "--provider",
                               "openai", "--base-url", fake_provider.openai_url, "--model", "m",
                               *args], home=home, cwd=ws, OPENAI_API_KEY="x", **env)


def _result(proc):
    return [json.loads(line) for line in proc.stdout.splitlines()][-1]


def test_accept_edits_spelled_as_claude_code_does(tmp_path, fake_provider):
    fake_provider.script(Reply.tool_call("write_file", {"path": "a.txt", "content": "hi\n"},
                                         id="w1"), Reply.text("written"))
    ws, proc = _run(tmp_path, fake_provider, "--permission-mode", "acceptEdits")
    assert proc.returncode == 0, proc.stderr
    assert (ws / "a.txt").read_text() == "hi\n"


def test_allowed_tools_in_claude_codes_syntax_let_exactly_that_run(tmp_path, fake_provider):
    fake_provider.script(
        Reply.tool_call("bash", {"command": "touch made.txt"}, id="b1"),
        Reply.tool_call("bash", {"command": "touch other.txt"}, id="b2"),
        Reply.text("done"))
    ws, proc = _run(tmp_path, fake_provider, "--allowedTools", "Bash(touch made.txt),Edit",
                    "Write")
    assert proc.returncode in (0, 3), proc.stderr
    assert (ws / "made.txt").exists()
    assert not (ws / "other.txt").exists()  # not allowed: denied headless, never run


def test_disallowed_tools_deny_even_under_bypass_permissions(tmp_path, fake_provider):
    fake_provider.script(
        Reply.tool_call("bash", {"command": "touch nope.txt"}, id="b1"),
        Reply.tool_call("write_file", {"path": "yes.txt", "content": "y\n"}, id="w1"),
        Reply.text("done"))
    ws, proc = _run(tmp_path, fake_provider, "--permission-mode", "bypassPermissions",
                    "--disallowedTools", "Bash(touch:*)")
    assert not (ws / "nope.txt").exists()
    assert (ws / "yes.txt").read_text() == "y\n"  # bypassPermissions approved the write
    denied = [e for e in (json.loads(ln) for ln in proc.stdout.splitlines())
              if e["type"] == "tool-denied"]
    assert [e["id"] for e in denied] == ["b1"] and denied[0]["by"] == "rule"
    assert _result(proc)["permission_denials"][0]["tool_input"] == {"command": "touch nope.txt"}


def test_a_rule_that_cannot_be_translated_stops_the_run(tmp_path, fake_provider):
    _, proc = _run(tmp_path, fake_provider, "--disallowedTools", "NotebookEdit(x)")
    assert proc.returncode == 2
    assert "--disallowedTools 'NotebookEdit(x)'" in proc.stderr
    assert fake_provider.requests == []  # nothing was sent


def test_without_the_compat_plugin_the_rules_are_refused_not_ignored(tmp_path, fake_provider):
    _, proc = _run(tmp_path, fake_provider, "--disable", "compat", "--disallowedTools", "Bash")
    assert proc.returncode == 2
    assert "compat plugin" in proc.stderr
    assert fake_provider.requests == []
