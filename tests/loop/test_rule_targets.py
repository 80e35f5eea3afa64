"""Rules on tools whose calls carry no path, command or URL: the skill's name, the subagent's
kind, grep's pattern and a git ref are targets the permission rules match (issue: such rules
were accepted and silently ignored)."""

from __future__ import annotations

import json
import subprocess

import pytest
from clirun import run_agent, run_agent_here
from fakeprovider import Reply

from agent.testing import gate_decision, make_boot


@pytest.fixture
def dirs(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    return home, ws


def run(fake_provider, home, ws, calls, *flags):
    fake_provider.script(Reply(tool_calls=[(n, a, f"c{i}") for i, (n, a) in enumerate(calls)]),
                         Reply.text("done"))
    proc = run_agent_here(["-p", "go", "--json", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m", *flags],
                          home=home, cwd=ws, OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    out = {}
    for event in map(json.loads, proc.stdout.splitlines()):
        if event["type"] in ("tool-result", "tool-denied", "tool-error"):
            out[event["id"]] = (event["type"], event.get("by"), event.get("reason", ""),
                                event.get("output", ""))
    return out


def test_a_skill_rule_denies_the_named_skill_and_allows_the_rest(dirs, fake_provider):
    home, ws = dirs
    (home / "config.toml").write_text('[permission]\nskill = {"*" = "allow", "commit" = "deny"}\n')
    out = run(fake_provider, home, ws, [("skill", {"name": "commit"}),
                                        ("skill", {"name": "debug"})])
    assert out["c0"][:2] == ("tool-denied", "rule")
    assert 'skill: "commit"' in out["c0"][2]
    assert out["c1"][0] == "tool-result"
    # the denied skill's instructions never reached the model
    told = [m["content"] for m in fake_provider.requests[1].body["messages"]
            if m["role"] == "tool"]
    assert "Refused by the permission rule" in told[0]


def test_a_skill_rule_holds_under_yolo(dirs, fake_provider):
    home, ws = dirs
    (home / "config.toml").write_text('[permission]\nskill = {"commit" = "deny"}\n')
    out = run(fake_provider, home, ws, [("skill", {"name": "commit"})], "--yolo")
    assert out["c0"][:2] == ("tool-denied", "rule")


def test_a_deny_flag_on_a_skill(dirs, fake_provider):
    home, ws = dirs
    out = run(fake_provider, home, ws, [("skill", {"name": "commit"}),
                                        ("skill", {"name": "debug"})],
              "--deny", "skill:commit")
    assert out["c0"][:2] == ("tool-denied", "rule") and out["c1"][0] == "tool-result"


def test_a_task_rule_matches_the_subagent_kind(dirs, fake_provider):
    home, ws = dirs
    (home / "config.toml").write_text('[permission]\ntask = {"*" = "allow", "review" = "deny"}\n')
    fake_provider.script(
        Reply(tool_calls=[("task", {"description": "look", "prompt": "review it",
                                    "kind": "review"}, "c0")]),
        Reply.text("done"))
    proc = run_agent_here(["-p", "go", "--json", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"],
                          home=home, cwd=ws, OPENAI_API_KEY="x")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    denied = [e for e in events if e["type"] == "tool-denied"]
    assert [e["id"] for e in denied] == ["c0"] and denied[0]["by"] == "rule"
    assert len(fake_provider.requests) == 2  # no subagent request was ever made


def test_a_grep_rule_matches_the_search_pattern(dirs, fake_provider):
    home, ws = dirs
    (ws / "a.txt").write_text("password = hunter2\nTODO: fix\n")
    (home / "config.toml").write_text(
        '[permission]\ngrep = {"*" = "allow", "*password*" = "deny"}\n')
    out = run(fake_provider, home, ws, [("grep", {"pattern": "password"}),
                                        ("grep", {"pattern": "TODO"})])
    assert out["c0"][:2] == ("tool-denied", "rule")
    assert out["c1"][0] == "tool-result" and "TODO" in out["c1"][3]
    assert "hunter2" not in json.dumps(fake_provider.requests[1].body)


def git(ws, *argv):
    subprocess.run(["git", *argv], cwd=ws, check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x",
                        "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x",
                        "PATH": "/usr/bin:/bin", "HOME": str(ws)})


def test_a_git_show_rule_matches_the_ref_and_a_rev_path_is_a_read(dirs, fake_provider):
    home, ws = dirs
    git(ws, "init", "-q", "-b", "main")
    (ws / "notes.txt").write_text("public\n")
    (ws / "private").mkdir()
    (ws / "private" / "plan.txt").write_text("TOPSECRET\n")
    git(ws, "add", ".")
    git(ws, "commit", "-q", "-m", "first")
    git(ws, "tag", "v1")
    (home / "config.toml").write_text(
        '[permission]\ngit_show = {"*" = "allow", "v1*" = "deny", "private/*" = "deny"}\n')
    out = run(fake_provider, home, ws, [("git_show", {"ref": "v1"}),
                                        ("git_show", {"ref": "HEAD:private/plan.txt"}),
                                        ("git_show", {"ref": "HEAD:notes.txt"})])
    assert out["c0"][:2] == ("tool-denied", "rule")
    assert out["c1"][:2] == ("tool-denied", "rule")
    assert out["c2"][0] == "tool-result" and "public" in out["c2"][3]
    assert "TOPSECRET" not in json.dumps(fake_provider.requests[1].body)


@pytest.mark.e2e
async def test_policy_explain_shows_targets(dirs):
    home, ws = dirs
    (home / "config.toml").write_text('[permission]\nskill = {"*" = "allow", "commit" = "deny"}\n')
    proc = run_agent(["policy", "explain", "skill", '{"name": "commit"}'], home=home, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert "targets=['commit']" in proc.stdout and "decision: deny" in proc.stdout


async def test_targets_keep_the_default_policy_for_read_only_tools(dirs):
    """A target is not an effect: skill, grep and git_show stay allowed without rules."""
    home, ws = dirs
    config, hooks = make_boot(ws, home, builtins=["skills", "files", "git"])
    tools = hooks.tools(config)
    for name, args in (("skill", {"name": "commit"}), ("grep", {"pattern": "x"}),
                       ("git_show", {"ref": "HEAD"})):
        decision = await gate_decision(config, hooks, tools[name], args)
        assert decision.allowed, (name, decision)


# ---- rules that can never match are refused at startup ------------------------------------

def headless(fake_provider, home, ws, *flags):
    fake_provider.script(Reply.text("hi"))
    return run_agent_here(["-p", "go", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m", *flags],
                          home=home, cwd=ws, OPENAI_API_KEY="x")


@pytest.mark.parametrize("text,line", [
    ('[permission]\nbash = "ask"\ntodo_write = { "*" = "allow", "x" = "deny" }\n', 3),
    ('# rules\n[permission.current_time]\n"*" = "allow"\n"never" = "deny"\n', 4),
])
def test_a_pattern_rule_on_a_tool_without_subjects_is_refused_with_file_and_line(
        dirs, fake_provider, text, line):
    home, ws = dirs
    (home / "config.toml").write_text(text)
    proc = headless(fake_provider, home, ws)
    assert proc.returncode == 2
    assert f"{home / 'config.toml'} line {line}: the permission rule" in proc.stderr
    assert "can never match" in proc.stderr
    assert fake_provider.requests == []


def test_a_project_rule_that_can_never_match_is_refused_too(dirs, fake_provider):
    home, ws = dirs
    (ws / ".agent").mkdir()
    (ws / ".agent" / "config.toml").write_text('[permission]\nremember = {"x*" = "deny"}\n')
    proc = headless(fake_provider, home, ws)
    assert proc.returncode == 2
    assert f"{ws / '.agent' / 'config.toml'} line 2:" in proc.stderr
    assert fake_provider.requests == []


def test_a_flag_rule_that_can_never_match_is_refused(dirs, fake_provider):
    home, ws = dirs
    proc = headless(fake_provider, home, ws, "--deny", "current_time:tomorrow")
    assert proc.returncode == 2
    assert "--deny 'current_time:tomorrow': the permission rule" in proc.stderr


def test_one_decision_for_a_tool_without_subjects_is_fine_and_applies(dirs, fake_provider):
    home, ws = dirs
    (home / "config.toml").write_text('[permission]\ncurrent_time = {"*" = "deny"}\n')
    out = run(fake_provider, home, ws, [("current_time", {})], "--yolo")
    assert out["c0"][:2] == ("tool-denied", "rule")
