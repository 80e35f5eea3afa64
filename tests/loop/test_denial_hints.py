"""A headless denial names what would have let the call through, and it would: for each kind
of tool, the hint the model got is parsed, the run repeated with the first flags it names,
and the call then runs (its effect is on disk).  The real CLI, the fake provider."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

HINT = re.compile(r"rerun with (.+?)(?: \(or (.+?)\))*(?:, or --yolo)\.")


def run(fake_provider, tmp_path, ws, call, flags):
    name, args = call
    fake_provider.requests.clear()
    fake_provider.script(Reply.tool_call(name, args, id="c1"), Reply.text("ok"))
    proc = run_agent_here(["-p", "do it", "--output-format", "json", *flags, "--provider",
                           "openai", "--base-url", fake_provider.openai_url, "--model", "m"],
                          home=tmp_path / "home", cwd=ws, OPENAI_API_KEY="x",
                          AGENT_OPENAI_API="chat")
    assert proc.returncode == 0, proc.stderr
    (result,) = [json.loads(line) for line in proc.stdout.splitlines()]
    told = [m["content"] for m in fake_provider.requests[-1].body["messages"]
            if m["role"] == "tool"]
    return result, told


# (call, flags already given, what the hint must name, the effect once allowed)
CASES = {
    "command that writes, its command allowed": (
        ("bash", {"command": "touch made.txt"}), ["--allow", "bash:touch *"],
        ["--allow 'bash:touch *' --permission-mode accept-edits",
         "--allow 'bash:touch *' --allow 'write_file:made.txt'"],
        lambda ws: (ws / "made.txt").exists()),
    "command": (
        ("bash", {"command": "mkdir -p built/out"}), [],
        ["--allow 'bash:mkdir *'"],
        lambda ws: (ws / "built" / "out").is_dir()),
    "file write": (
        ("write_file", {"path": "notes.txt", "content": "hi\n"}), [],
        ["--permission-mode accept-edits", "--allow 'write_file:notes.txt'",
         "--allow write_file"],
        lambda ws: (ws / "notes.txt").is_file() and (ws / "notes.txt").read_text() == "hi\n"),
    "file edit": (
        ("edit_file", {"path": "old.txt", "oldString": "before", "newString": "after"}), [],
        ["--permission-mode accept-edits", "--allow 'edit_file:old.txt'"],
        lambda ws: (ws / "old.txt").read_text() == "after\n"),
    "file delete": (
        ("delete_file", {"path": "old.txt"}), [],
        ["--permission-mode accept-edits", "--allow 'delete_file:old.txt'"],
        lambda ws: not (ws / "old.txt").exists()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_denial_names_flags_that_let_the_call_through(case, tmp_path, fake_provider):
    call, given, named, effect = CASES[case]
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "old.txt").write_text("before\n")
    result, told = run(fake_provider, tmp_path, ws, call, given)
    assert result["stop_reason"] == "denied" and not effect(ws)
    (reason,) = told
    assert "headless run, so it was denied" in reason
    for flags in named:
        assert flags in reason, reason
    match = HINT.search(reason)
    assert match, reason
    rerun = shlex.split(match.group(1))
    again, _ = run(fake_provider, tmp_path, ws, call, rerun)
    assert again["stop_reason"] == "done" and again["permission_denials"] == []
    assert effect(ws), (case, rerun)


def test_a_command_no_rule_can_allow_says_so(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    result, (reason,) = run(fake_provider, tmp_path, ws,
                            ("bash", {"command": 'cmd=rm; "$cmd" old.txt'}), [])
    assert result["stop_reason"] == "denied"
    assert "--allow" not in reason and "cannot be checked without running it" in reason


def test_policy_explain_headless_shows_the_decision_a_ci_run_gets(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    args = ["policy", "explain", "bash", '{"command": "touch made.txt"}', "--headless",
            "--allow", "bash:touch *"]
    proc = run_agent_here(args, home=tmp_path / "home", cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert "headless: deny" in proc.stdout
    assert "--allow 'bash:touch *' --permission-mode accept-edits" in proc.stdout
    ok = run_agent_here([*args, "--permission-mode", "accept-edits"], home=tmp_path / "home",
                        cwd=ws)
    assert ok.returncode == 0, ok.stderr
    assert "headless: allow" in ok.stdout
    assert not (ws / "made.txt").exists()  # explaining runs nothing
