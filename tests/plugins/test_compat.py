"""A Claude Code user's setup used as it is, through the real CLI and the fake provider
(tests/claude_setup.py builds the workspace and home)."""

from __future__ import annotations

import json
import sys

import pytest
from claude_setup import build
from clirun import run_agent_here
from fakeprovider import Reply

from plugins_builtin.compat.rules import translate_rule

pytestmark = pytest.mark.timeout(90)


def agent(args, ws, home, fake_provider, **env):
    """``agent ARGS`` against the fake provider, with ``home`` as the Claude/Codex home."""
    agent_home = ws.parent / "agenthome"
    agent_home.mkdir(exist_ok=True)
    return run_agent_here([*args, "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"],
                          home=agent_home, cwd=ws, OPENAI_API_KEY="x", HOME=str(home), **env)


def trust(ws, home, fake_provider):
    proc = agent(["trust"], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    return proc


def tool_results(body) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def user_text(body) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else content[0]["text"]


# ---- commands --------------------------------------------------------------------------------


def test_claude_and_codex_commands_expand_in_p_prompts(tmp_path, fake_provider):
    ws, home, _ = build(tmp_path)
    fake_provider.script(Reply.text("a"), Reply.text("b"), Reply.text("c"))
    proc = agent(["-p", '/review-pr 42 "error handling"'], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    assert user_text(fake_provider.bodies[0]) == (
        "Review pull request #42, paying most attention to error handling.\n"
        'Everything you were given: 42 "error handling"')
    proc = agent(["-p", "/frontend:component Button"], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    assert user_text(fake_provider.bodies[1]).startswith(
        "Create a React component named Button under src/components")
    proc = agent(["-p", "/prompts:explain parser.py"], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    assert user_text(fake_provider.bodies[2]) == "Explain parser.py to a new teammate."


# ---- before the one-time approval ------------------------------------------------------------


def test_untrusted_repository_denies_at_once_but_starts_nothing_and_allows_nothing(
        tmp_path, fake_provider):
    ws, home, seen = build(tmp_path)
    fake_provider.script(Reply.tool_call("bash", {"command": "touch marker.txt"}, id="t1"),
                         Reply.text("ok"))
    proc = agent(["-p", "go", "--yolo"], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    assert not (ws / "marker.txt").exists()  # the repository's deny held, even under --yolo
    assert "touch" in tool_results(fake_provider.bodies[1])[0]
    offered = {t["function"]["name"] for t in fake_provider.bodies[0]["tools"]}
    assert not any(name.startswith("mcp__stub__") for name in offered)
    assert not (seen / "pre.jsonl").exists()  # the repository's hooks did not run
    assert "not used until you approve them once with /trust" in proc.stderr
    assert "WebSearch" in proc.stderr  # an untranslatable rule is reported
    assert "theme is not used" in proc.stderr


def test_user_level_deny_applies(tmp_path, fake_provider):
    ws, home, _ = build(tmp_path)
    fake_provider.script(Reply.tool_call("bash", {"command": "npm publish --force"}, id="s1"),
                         Reply.text("ok"))
    proc = agent(["-p", "go", "--yolo"], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    told = tool_results(fake_provider.bodies[1])[0]
    assert "Refused by the deny rule bash:npm publish*" in told
    assert "another agent's settings" in told


# ---- after it --------------------------------------------------------------------------------


def test_after_approval_the_mcp_server_is_called_by_the_allow_rule(tmp_path, fake_provider):
    ws, home, _ = build(tmp_path)
    trust(ws, home, fake_provider)
    fake_provider.script(Reply.tool_call("mcp__stub__echo", {"text": "hello stub"}, id="m1"),
                         Reply.text("done"))
    proc = agent(["-p", "echo it", "--json"], ws, home, fake_provider,
                 AGENT_MCP_STARTUP_TIMEOUT="60")
    assert proc.returncode == 0, proc.stderr
    offered = {t["function"]["name"] for t in fake_provider.bodies[0]["tools"]}
    assert "mcp__stub__echo" in offered and "mcp__codex-stub__echo" in offered
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    result = next(e for e in events if e["type"] in ("tool-result", "tool-denied"))
    assert result["type"] == "tool-result", result  # no --yolo: the allow rule let it run
    assert "hello stub" in tool_results(fake_provider.bodies[1])[0]


def test_a_changed_file_needs_a_new_approval(tmp_path, fake_provider):
    ws, home, _ = build(tmp_path)
    trust(ws, home, fake_provider)
    mcp = json.loads((ws / ".mcp.json").read_text())
    mcp["mcpServers"]["stub"]["args"].append("--probe-tools")
    (ws / ".mcp.json").write_text(json.dumps(mcp))
    fake_provider.script(Reply.text("hi"))
    proc = agent(["-p", "hi"], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    offered = {t["function"]["name"] for t in fake_provider.bodies[0]["tools"]}
    assert not any(name.startswith("mcp__stub__") for name in offered)
    assert "approve them once" in proc.stderr


def test_pre_tool_use_hook_exit_2_blocks_with_its_reason(tmp_path, fake_provider):
    ws, home, seen = build(tmp_path)
    (ws / "keep.txt").write_text("precious")
    trust(ws, home, fake_provider)
    fake_provider.script(Reply.tool_call("bash", {"command": "rm keep.txt"}, id="r1"),
                         Reply.text("ok"))
    proc = agent(["-p", "clean up", "--yolo"], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    assert (ws / "keep.txt").read_text() == "precious"
    told = tool_results(fake_provider.bodies[1])[0]
    assert "rm is not allowed here; move files to trash/ instead" in told
    event = json.loads((seen / "pre.jsonl").read_text().splitlines()[0])
    assert event["hook_event_name"] == "PreToolUse" and event["tool_name"] == "Bash"
    assert event["tool_input"]["command"] == "rm keep.txt" and event["cwd"] == str(ws)


def test_post_tool_use_hook_sees_the_result(tmp_path, fake_provider):
    ws, home, seen = build(tmp_path)
    trust(ws, home, fake_provider)
    fake_provider.script(Reply.tool_call("bash", {"command": "echo from-the-tool"}, id="e1"),
                         Reply.text("ok"))
    proc = agent(["-p", "say it"], ws, home, fake_provider)  # allowed by Bash(echo:*)
    assert proc.returncode == 0, proc.stderr
    event = json.loads((seen / "post.jsonl").read_text().splitlines()[0])
    assert event["hook_event_name"] == "PostToolUse" and event["tool_name"] == "Bash"
    assert "from-the-tool" in event["tool_response"]["output"]
    assert (seen / "stop.txt").read_text() == "stopped\n"  # the Stop hook ran after the turn


# ---- our own [hooks] -------------------------------------------------------------------------


def _config(ws, text):
    agent_home = ws.parent / "agenthome"
    agent_home.mkdir(exist_ok=True)
    (agent_home / "config.toml").write_text(text)


@pytest.mark.parametrize("on_error, runs", [("deny", False), ("allow", True)])
def test_a_crashing_pre_tool_use_hook_denies_unless_on_error_allow(
        tmp_path, fake_provider, on_error, runs):
    ws, home = tmp_path / "ws", tmp_path / "userhome"
    ws.mkdir()
    home.mkdir()
    _config(ws, f'[[hooks.PreToolUse]]\nmatcher = "bash"\ncommand = "exit 1"\n'
                f'on_error = "{on_error}"\n')
    fake_provider.script(Reply.tool_call("bash", {"command": "echo x > made.txt"}, id="c1"),
                         Reply.text("ok"))
    proc = agent(["-p", "go", "--yolo"], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    assert (ws / "made.txt").exists() is runs
    if not runs:
        assert "exited 1" in tool_results(fake_provider.bodies[1])[0]


def test_a_hook_cannot_turn_a_deny_into_an_allow(tmp_path, fake_provider):
    ws, home = tmp_path / "ws", tmp_path / "userhome"
    ws.mkdir()
    home.mkdir()
    allow = json.dumps({"hookSpecificOutput": {"permissionDecision": "allow"}})
    _config(ws, '[permission]\nbash = { "touch *" = "deny" }\n'
                f"[[hooks.PreToolUse]]\nmatcher = \"Bash\"\ncommand = '''echo '{allow}' '''\n")
    fake_provider.script(Reply.tool_call("bash", {"command": "touch nope.txt"}, id="d1"),
                         Reply.text("ok"))
    proc = agent(["-p", "go", "--yolo"], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    assert not (ws / "nope.txt").exists()


# ---- agent import ----------------------------------------------------------------------------


def importing(args, ws, home):
    agent_home = ws.parent / "agenthome"
    agent_home.mkdir(exist_ok=True)
    return run_agent_here(["import", *args], home=agent_home, cwd=ws, HOME=str(home))


def test_import_prints_and_writes_the_config(tmp_path):
    ws, home, _ = build(tmp_path)
    proc = importing(["--from", "claude"], ws, home)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "[mcp_servers.stub]" in out and "mcp__stub__echo" in out
    assert '"npm run test *" = "allow"' in out and '"touch*" = "deny"' in out
    assert "[[hooks.PreToolUse]]" in out
    assert "# not imported:" in out and "WebSearch" in out
    proc = importing(["--from", "codex", "--write"], ws, home)
    assert proc.returncode == 0, proc.stderr
    written = (ws.parent / "agenthome" / "config.toml").read_text()
    assert "codex-stub" in written and sys.executable in written


# ---- rule translation ------------------------------------------------------------------------


@pytest.mark.parametrize("rule, wide, expected", [
    ("Bash(npm run test:*)", False, [("bash", "npm run test"), ("bash", "npm run test *")]),
    ("Bash(npm run test:*)", True, [("bash", "npm run test*")]),
    ("Bash", False, [("bash", "*")]),
    ("Read(./.env)", True, [("read_file", ".env"), ("read_many_files", ".env")]),
    ("Read(.env)", True, [("read_file", ".env"), ("read_file", "*/.env"),
                          ("read_many_files", ".env"), ("read_many_files", "*/.env")]),
    ("Edit(src/**)", False, [(t, "src/*") for t in ("write_file", "edit_file", "multi_edit",
                                                    "apply_patch")]),
    ("Read(src/**/*.key)", True, [("read_file", "src/*/*.key"), ("read_file", "src/*.key"),
                                  ("read_many_files", "src/*/*.key"),
                                  ("read_many_files", "src/*.key")]),
    ("mcp__github__create_issue", False, [("mcp__github__create_issue", "*")]),
    ("mcp__my_server", False, [("mcp__my-server__*", "*")]),
])
def test_rules_translate(rule, wide, expected):
    assert translate_rule(rule, "/home/u", wide=wide) == expected


def test_domain_rule_and_untranslatable_ones():
    pairs = translate_rule("WebFetch(domain:docs.example.com)")
    assert ("web_fetch", "https://docs.example.com/*") in pairs
    for rule in ("WebSearch", "NotebookEdit(x)", "Task(explore)", "Bash(", "WebFetch(x)"):
        with pytest.raises(ValueError):
            translate_rule(rule)


# ---- agents and skills -----------------------------------------------------------------------


def test_agent_files_are_task_kinds_with_their_tool_lists_on_the_wire(tmp_path, fake_provider):
    ws, home, _ = build(tmp_path)
    task = {"kind": "code-reviewer", "description": "review the app", "prompt": "review src"}
    fake_provider.script(Reply.tool_call("task", task, id="k1"),
                         Reply.tool_call("bash", {"command": "echo sneaky > sneaky.txt"},
                                         id="k2"),
                         Reply.text("no defects"), Reply.text("reviewed"))
    proc = agent(["-p", "review it", "--yolo"], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    main, sub = fake_provider.bodies[0], fake_provider.bodies[1]
    task_tool = next(t for t in main["tools"] if t["function"]["name"] == "task")
    kinds = task_tool["function"]["parameters"]["properties"]["kind"]
    assert {"code-reviewer", "test-runner"} <= set(kinds["enum"])
    assert "Reviews changed code for bugs and style" in kinds["description"]
    assert "release-notes" in main["messages"][0]["content"]  # the skill is offered
    offered = {t["function"]["name"] for t in sub["tools"]}
    assert offered == {"read_file", "read_many_files", "grep", "glob"}
    assert sub["messages"][0]["content"].startswith("You are a senior reviewer.")
    assert not (ws / "sneaky.txt").exists()  # bash is not among its tools: never ran
    assert "bash" in tool_results(fake_provider.bodies[2])[0]


def test_user_prompt_submit_hook_refuses_or_adds_context(tmp_path, fake_provider):
    ws, home = tmp_path / "ws", tmp_path / "userhome"
    ws.mkdir()
    home.mkdir()
    script = ws.parent / "gate.py"
    script.write_text(
        "import json, sys\n"
        "prompt = json.load(sys.stdin)['prompt']\n"
        "if 'secret' in prompt:\n"
        "    print('no secrets in prompts', file=sys.stderr); sys.exit(2)\n"
        "print('the build is frozen today')\n")
    _config(ws, f'[[hooks.UserPromptSubmit]]\ncommand = "{sys.executable} {script}"\n')
    fake_provider.script(Reply.text("noted"))
    proc = agent(["-p", "here is my secret"], ws, home, fake_provider)
    assert proc.returncode != 0
    assert "no secrets in prompts" in proc.stderr + proc.stdout
    assert not fake_provider.bodies  # nothing was sent
    proc = agent(["-p", "ship it"], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    sent = json.dumps(fake_provider.bodies[0]["messages"][-1])
    assert "ship it" in sent and "the build is frozen today" in sent


def test_import_keeps_variable_references_and_reports_what_it_cannot_use(tmp_path):
    ws, home, _ = build(tmp_path)
    mcp = json.loads((ws / ".mcp.json").read_text())
    mcp["mcpServers"]["docs"] = {"type": "http", "url": "https://docs.example/mcp",
                                 "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
    (ws / ".mcp.json").write_text(json.dumps(mcp))
    (ws / "CLAUDE.local.md").write_text("my notes\n")
    (ws / ".claude" / "commands" / "ctx.md").write_text("Status: !`git status`\n$ARGUMENTS\n")
    (ws / ".claude" / "agents" / "explore.md").write_text(
        "---\nname: explore\ndescription: mine\n---\nshadowed\n")
    proc = run_agent_here(["import", "--from", "claude"], home=ws.parent / "agenthome",
                          cwd=ws, HOME=str(home), DOCS_TOKEN="sk-do-not-write-me")
    assert proc.returncode == 0, proc.stderr
    assert "Bearer ${DOCS_TOKEN}" in proc.stdout and "sk-do-not-write-me" not in proc.stdout
    for reported in ("CLAUDE.local.md is not read", "ctx.md: its !`command` lines",
                     "explore is a builtin subagent kind", "allowed-tools is not used",
                     "model sonnet is not used"):
        assert reported in proc.stdout, reported


def test_a_slow_pre_tool_use_hook_gets_its_own_timeout_not_the_guard_default(
        tmp_path, fake_provider):
    ws, home = tmp_path / "ws", tmp_path / "userhome"
    ws.mkdir()
    home.mkdir()
    # slower than the 2 s guard default, well inside the hook's own 20 s
    _config(ws, '[[hooks.PreToolUse]]\nmatcher = "bash"\ncommand = "sleep 2.5"\n'
                "timeout = 20\n")
    fake_provider.script(Reply.tool_call("bash", {"command": "echo x > made.txt"}, id="w1"),
                         Reply.text("ok"))
    proc = agent(["-p", "go", "--yolo"], ws, home, fake_provider)
    assert proc.returncode == 0, proc.stderr
    assert (ws / "made.txt").exists(), tool_results(fake_provider.bodies[1])
