"""Headless permissions for CI: ``--allow RULE``, ``--deny RULE`` and ``--permission-mode``,
through the real CLI and the fake provider.  Oracles: files on disk, a marker a command would
create, the exit code, what the model was told."""

from __future__ import annotations

import json
import os

import pytest
from clirun import run_agent_here
from fakeprovider import Reply


@pytest.fixture
def dirs(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    return home, ws


def agent(fake_provider, home, ws, *flags, calls=(), text="done"):
    """One headless turn: the model makes ``calls`` (one step), then says ``text``."""
    replies = [Reply(tool_calls=[(name, args, f"c{i}") for i, (name, args) in
                                 enumerate(calls)])] if calls else []
    fake_provider.script(*replies, Reply.text(text))
    return run_agent_here(["-p", "go", "--json", "--provider", "openai", "--base-url",
                                fake_provider.openai_url, "--model", "m", *flags],
                               home=home, cwd=ws, OPENAI_API_KEY="x")


def outcome(proc):
    """{call id: "ran" | "denied:<by>"} from the JSON events."""
    assert proc.returncode == 0, proc.stderr
    out = {}
    for event in map(json.loads, proc.stdout.splitlines()):
        if event["type"] == "tool-result":
            out[event["id"]] = "ran"
        elif event["type"] == "tool-denied":
            out[event["id"]] = "denied:" + event["by"]
    return out


def write(path, content="new"):
    return ("write_file", {"path": path, "content": content})


def bash(command):
    return ("bash", {"command": command})


# ---- --allow --------------------------------------------------------------------------------

def test_allow_a_tool_lets_its_writes_reach_disk_and_nothing_else(dirs, fake_provider):
    home, ws = dirs
    marker = ws.parent / "marker"
    proc = agent(fake_provider, home, ws, "--allow", "write_file",
                 calls=[write("a.txt", "A"), bash(f"touch {marker}")])
    assert outcome(proc) == {"c0": "ran", "c1": "denied:headless"}
    assert (ws / "a.txt").read_text() == "A"
    assert not marker.exists()


def test_without_flags_the_same_write_never_reaches_disk(dirs, fake_provider):
    home, ws = dirs
    proc = agent(fake_provider, home, ws, calls=[write("a.txt", "A")])
    assert outcome(proc) == {"c0": "denied:headless"}
    assert not (ws / "a.txt").exists()
    told = [m["content"] for m in fake_provider.requests[1].body["messages"]
            if m["role"] == "tool"]
    assert "--allow write_file" in told[0]  # the model can tell the user what to pass


def test_allow_a_command_pattern_allows_only_what_it_matches(dirs, fake_provider):
    home, ws = dirs
    # touch writes its file, so the write needs allowing too (write_file rules judge it)
    proc = agent(fake_provider, home, ws, "--allow", "bash:touch ok*", "--allow", "write_file",
                 calls=[bash("touch ok.txt"), bash("touch bad.txt"),
                        bash("touch ok2.txt && touch bad2.txt"),
                        bash("touch ok3.txt; touch bad3.txt")])
    assert outcome(proc) == {"c0": "ran", "c1": "denied:headless", "c2": "denied:headless",
                             "c3": "denied:headless"}
    assert sorted(os.listdir(ws)) == ["ok.txt"]


def test_allow_rules_repeat_and_each_part_of_a_compound_command_may_match_another(
        dirs, fake_provider):
    home, ws = dirs
    proc = agent(fake_provider, home, ws, "--allow", "bash:touch a*", "--allow",
                 "bash:touch b*", "--allow", "write_file",
                 calls=[bash("touch a1 && touch b1"), bash("touch c1")])
    assert outcome(proc) == {"c0": "ran", "c1": "denied:headless"}
    assert sorted(os.listdir(ws)) == ["a1", "b1"]


def test_allow_with_a_path_pattern(dirs, fake_provider):
    home, ws = dirs
    (ws / "src").mkdir()
    proc = agent(fake_provider, home, ws, "--allow", "write_file:src/*",
                 calls=[write("src/a.py"), write("./src/../src/b.py"), write("docs/c.md")])
    assert outcome(proc) == {"c0": "ran", "c1": "ran", "c2": "denied:headless"}
    assert sorted(os.listdir(ws / "src")) == ["a.py", "b.py"] and not (ws / "docs").exists()


def test_allow_never_lifts_a_config_deny(dirs, fake_provider):
    home, ws = dirs
    (home / "config.toml").write_text(
        '[permission]\nwrite_file = { "*" = "ask", "locked/*" = "deny" }\n')
    (ws / "locked").mkdir()
    proc = agent(fake_provider, home, ws, "--allow", "write_file", "--allow",
                 "write_file:locked/*", calls=[write("locked/x"), write("free.txt")])
    assert outcome(proc) == {"c0": "denied:rule", "c1": "ran"}
    assert not (ws / "locked" / "x").exists() and (ws / "free.txt").exists()


def test_allow_never_lifts_a_project_deny(dirs, fake_provider):
    home, ws = dirs
    (ws / ".agent").mkdir()
    (ws / ".agent" / "config.toml").write_text('[permission]\nwrite_file = { "gen/*" = "deny" }\n')
    proc = agent(fake_provider, home, ws, "--allow", "write_file",
                 calls=[write("gen/out.c"), write("main.c")])
    assert outcome(proc) == {"c0": "denied:rule", "c1": "ran"}
    assert not (ws / "gen").exists() and (ws / "main.c").exists()


def test_allow_never_lifts_a_guard_or_the_default_secret_denial(dirs, fake_provider):
    home, ws = dirs
    (ws / ".env").write_text("TOKEN=1\n")
    proc = agent(fake_provider, home, ws, "--allow", "write_file", "--allow", "read_file",
                 calls=[write(".env", "TOKEN=stolen"), ("read_file", {"path": ".env"})])
    result = outcome(proc)
    assert result["c0"] == "denied:guard" and result["c1"].startswith("denied"), result
    assert (ws / ".env").read_text() == "TOKEN=1\n"
    assert "TOKEN=1" not in json.dumps(fake_provider.requests[1].body)


def test_allow_never_allows_a_command_that_cannot_be_resolved(dirs, fake_provider):
    home, ws = dirs
    marker = ws / "marker"
    proc = agent(fake_provider, home, ws, "--allow", "bash:*", "--disable", "guard",
                 calls=[bash(f"$(echo touch) {marker}"),  # the program is a substitution
                        bash(f"python3 -c 'open(\"{marker}\", \"w\")'")])
    assert outcome(proc) == {"c0": "denied:headless", "c1": "denied:headless"}
    assert not marker.exists()


# ---- --deny ---------------------------------------------------------------------------------

def test_deny_holds_under_yolo_and_against_an_allow(dirs, fake_provider):
    home, ws = dirs
    marker = ws.parent / "marker"
    proc = agent(fake_provider, home, ws, "--yolo", "--deny", "write_file:secret/*",
                 "--allow", "write_file", "--deny", "bash",
                 calls=[write("secret/k"), write("open.txt"), bash(f"touch {marker}")])
    assert outcome(proc) == {"c0": "denied:rule", "c1": "ran", "c2": "denied:rule"}
    assert not (ws / "secret").exists() and (ws / "open.txt").exists()
    assert not marker.exists()
    told = [m["content"] for m in fake_provider.requests[1].body["messages"]
            if m["role"] == "tool"]
    assert "--deny 'write_file:secret/*'" in told[0]


def test_flag_rules_on_write_file_judge_the_files_a_command_writes(dirs, fake_provider):
    home, ws = dirs
    (ws / "secret").mkdir()
    proc = agent(fake_provider, home, ws, "--yolo", "--deny", "write_file:secret/*",
                 calls=[bash("echo stolen > secret/k"), bash("echo fine > open.txt")])
    assert outcome(proc) == {"c0": "denied:rule", "c1": "ran"}
    assert os.listdir(ws / "secret") == [] and (ws / "open.txt").read_text() == "fine\n"
    (ws / "notes").mkdir()
    proc = agent(fake_provider, home, ws, "--allow", "bash:echo *", "--allow",
                 "write_file:notes/*",
                 calls=[bash("echo a > notes/a.txt"), bash("echo b > b.txt")])
    assert outcome(proc) == {"c0": "ran", "c1": "denied:headless"}
    assert not (ws / "b.txt").exists()


def test_deny_a_command_part_inside_a_compound_command(dirs, fake_provider):
    home, ws = dirs
    marker = ws.parent / "marker"
    proc = agent(fake_provider, home, ws, "--yolo", "--deny", "bash:touch *",
                 calls=[bash(f"true && touch {marker}"), bash("echo fine")])
    assert outcome(proc) == {"c0": "denied:rule", "c1": "ran"}
    assert not marker.exists()


def test_deny_matches_symlinked_spellings_of_a_path(dirs, fake_provider):
    home, ws = dirs
    (ws / "secret").mkdir()
    (ws / "link").symlink_to(ws / "secret")
    proc = agent(fake_provider, home, ws, "--yolo", "--deny", "write_file:secret/*",
                 calls=[write("link/k")])
    assert outcome(proc) == {"c0": "denied:rule"}
    assert os.listdir(ws / "secret") == []


# ---- --permission-mode ----------------------------------------------------------------------

def test_accept_edits_allows_edits_inside_the_workspace_only(dirs, fake_provider):
    home, ws = dirs
    outside = ws.parent / "outside"
    outside.mkdir()
    (ws / "escape").symlink_to(outside)
    (ws / "old.txt").write_text("old\n")
    marker = ws.parent / "marker"
    proc = agent(fake_provider, home, ws, "--permission-mode", "accept-edits",
                 calls=[write("a.txt", "A"),
                        ("edit_file", {"path": "old.txt", "oldString": "old",
                                       "newString": "new"}),
                        write(str(outside / "b.txt")), write("escape/c.txt"),
                        bash(f"touch {marker}")])
    result = outcome(proc)
    assert result["c0"] == "ran" and result["c1"] == "ran"
    assert all(result[c].startswith("denied") for c in ("c2", "c3", "c4")), result
    assert (ws / "a.txt").read_text() == "A" and (ws / "old.txt").read_text() == "new\n"
    assert os.listdir(outside) == [] and not marker.exists()


def test_accept_edits_leaves_configured_rules_in_charge(dirs, fake_provider):
    home, ws = dirs
    (home / "config.toml").write_text('[permission]\nwrite_file = { "*" = "ask" }\n')
    proc = agent(fake_provider, home, ws, "--permission-mode", "accept-edits",
                 calls=[write("a.txt")])
    assert outcome(proc) == {"c0": "denied:headless"}
    assert not (ws / "a.txt").exists()


def test_plan_mode_is_read_only_even_under_yolo(dirs, fake_provider):
    home, ws = dirs
    (ws / "notes.txt").write_text("read me\n")
    marker = ws.parent / "marker"
    proc = agent(fake_provider, home, ws, "--permission-mode", "plan", "--yolo",
                 "--allow", "write_file",
                 calls=[("read_file", {"path": "notes.txt"}), write("a.txt"),
                        bash(f"touch {marker}"),
                        ("delete_file", {"path": "notes.txt"})])
    assert outcome(proc) == {"c0": "ran", "c1": "denied:rule", "c2": "denied:rule",
                             "c3": "denied:rule"}
    assert sorted(os.listdir(ws)) == ["notes.txt"] and not marker.exists()
    told = [m["content"] for m in fake_provider.requests[1].body["messages"]
            if m["role"] == "tool"]
    assert "plan mode" in told[1]


def test_permission_mode_from_the_config_file(dirs, fake_provider):
    home, ws = dirs
    (home / "config.toml").write_text('permission_mode = "plan"\n')
    proc = agent(fake_provider, home, ws, "--yolo", calls=[write("a.txt")])
    assert outcome(proc) == {"c0": "denied:rule"}
    assert not (ws / "a.txt").exists()


def test_a_project_cannot_choose_the_permission_mode(dirs, fake_provider):
    home, ws = dirs
    (ws / ".agent").mkdir()
    (ws / ".agent" / "config.toml").write_text('permission_mode = "accept-edits"\n')
    proc = agent(fake_provider, home, ws, calls=[write("a.txt")])
    assert outcome(proc) == {"c0": "denied:headless"}


# ---- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("flags,expected", [
    (["--allow", ":x"], "name a tool before the pattern"),
    (["--allow", "bash:"], "the pattern after ':' is empty"),
    (["--deny", "bash pytest"], "is not a tool name"),
    (["--deny", "wirte_file"], "no tool is named 'wirte_file'"),
    (["--allow", "edit_fiel:src/*"], "no tool is named 'edit_fiel'"),
    (["--permission-mode", "yolo"], "invalid choice"),
])
def test_bad_flags_stop_with_a_clear_error_before_any_request(dirs, fake_provider, flags,
                                                              expected):
    home, ws = dirs
    proc = agent(fake_provider, home, ws, *flags, calls=[write("a.txt")])
    assert proc.returncode == 2
    assert expected in proc.stderr
    assert fake_provider.requests == [] and not (ws / "a.txt").exists()


def test_wildcard_and_mcp_keys_are_accepted_without_a_matching_tool(dirs, fake_provider):
    home, ws = dirs
    proc = agent(fake_provider, home, ws, "--deny", "mcp__*", "--allow", "mcp__srv__tool",
                 "--allow", "git_*")
    assert proc.returncode == 0, proc.stderr


def test_a_plugins_late_tools_are_accepted_and_other_unknown_names_refused(tmp_path):
    from agent import hookimpl
    from agent.boot.cli import unknown_flag_tools
    from agent.loop.permission_flags import FlagRules
    from agent.testing import make_boot

    class Remote:
        @hookimpl
        def agent_late_tools(self, config):
            return ["remote__*"]

    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["files"],
                              extra=[("remote", Remote())])
    try:
        tools, late = hooks.tools(config), hooks.late_tools(config)
        assert late == ["remote__*"]
        config.permission_flags = FlagRules.parse(["remote__box__run"], [])
        assert unknown_flag_tools(config, tools, late) == ""
        config.permission_flags = FlagRules.parse(["mcp__srv__tool"], [])  # mcp not loaded
        assert "no tool is named 'mcp__srv__tool'" in unknown_flag_tools(config, tools, late)
    finally:
        hooks.unconfigure(config)


def test_policy_explain_takes_the_same_flags(dirs):
    home, ws = dirs
    explain = ["policy", "explain", "bash", '{"command": "pytest -x"}']
    proc = run_agent_here([*explain, "--allow", "bash:pytest *"], home=home, cwd=ws)
    assert proc.returncode == 0, proc.stderr
    assert "decision: allow" in proc.stdout and "--allow 'bash:pytest *'" in proc.stdout
    proc = run_agent_here([*explain, "--yolo", "--permission-mode", "plan"], home=home, cwd=ws)
    assert "decision: deny" in proc.stdout and "plan mode" in proc.stdout
    proc = run_agent_here([*explain, "--allow", ":x"], home=home, cwd=ws)
    assert proc.returncode == 2 and "name a tool before the pattern" in proc.stderr
    proc = run_agent_here([*explain, "--bogus"], home=home, cwd=ws)
    assert proc.returncode == 2 and "usage: agent policy explain" in proc.stderr


async def test_the_ui_header_says_what_the_flags_add(tmp_path, fake_provider):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "ui"))
    from ui_harness import make_app

    from agent.loop.permission_flags import FlagRules

    app = make_app(tmp_path, fake_provider.openai_url, flags={"permission_mode": "plan"})
    app.config.permission_flags = FlagRules.parse(["bash:pytest *"], ["web_fetch"])
    try:
        app.start()
        lines = app.transcript.walker[0].block.text.splitlines()
        assert ("permissions for this run: plan mode (read-only), --allow 'bash:pytest *', "
                "--deny web_fetch") in lines
    finally:
        app.hooks.unconfigure(app.config)


def test_allow_follows_symlinks_to_where_a_path_really_leads(dirs, fake_provider):
    home, ws = dirs
    (ws / "src").mkdir()
    (ws / "ci").mkdir()
    (ws / "src" / "link").symlink_to(ws / "ci")
    proc = agent(fake_provider, home, ws, "--allow", "write_file:src/*",
                 calls=[write("src/link/deploy.yml"), write("src/ok.py")])
    assert outcome(proc) == {"c0": "denied:headless", "c1": "ran"}
    assert os.listdir(ws / "ci") == [] and (ws / "src" / "ok.py").exists()


async def test_a_config_allow_holds_only_where_a_path_really_leads(tmp_path):
    from agent.testing import gate_decision, make_boot

    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "ci").mkdir()
    (ws / "src" / "link").symlink_to(ws / "ci")
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["files"],
                              file_data={"permission": {"write_file": {"src/*": "allow"}}})
    tool = hooks.tools(config)["write_file"]
    for path, allowed in (("src/link/deploy.yml", False), ("src/ok.py", True),
                          (str(ws / "src" / "abs.py"), True), ("./src/../src/dot.py", True),
                          ("ci/x.yml", False)):
        decision = await gate_decision(config, hooks, tool, {"path": path, "content": "x"})
        assert decision.allowed is allowed, (path, decision)
