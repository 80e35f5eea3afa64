"""Permission rules and the gate: decisions on effects, as a user configures them."""

from __future__ import annotations

import pytest
from clirun import run_agent_here
from hypothesis import given, settings
from hypothesis import strategies as st
from lanes import examples

from agent import Effects, Tool, hookimpl
from agent.loop import permissions as perm
from agent.testing import gate_decision, make_boot


def mk(name, effects):
    async def run(args, ctx):
        return "ran"
    return Tool(name, name, run, {"type": "object"}, effects=effects)


READ = mk("read_thing", lambda a: Effects(reads=(a["path"],)))
WRITE = mk("write_thing", lambda a: Effects(writes=(a["path"],)))
MOVE = mk("move_thing", lambda a: Effects(reads=(a["from"],), writes=(a["to"],),
                                          deletes=(a["from"],)))
SHELL = mk("shell", lambda a: Effects(command=a["command"]))
MCP = mk("mcp__srv__do", lambda a: Effects(opaque=True))


class Tools:
    @hookimpl
    def agent_register_tools(self, register, config):
        for tool in (READ, WRITE, MOVE, SHELL, MCP):
            register(tool)


def boot(tmp_path, permission=None, project=None):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    config, hooks = make_boot(ws, tmp_path / "h", builtins=[], extra=[("tools", Tools())],
                              file_data={"permission": permission or {}})
    config.project_permission = project or {}
    return config, hooks


async def decide(tmp_path, tool, args, permission=None, project=None, **kw):
    config, hooks = boot(tmp_path, permission, project)
    return await gate_decision(config, hooks, tool, args, **kw)


async def always_yes(request):
    return "yes"


CASES = [
    # (tool, args, permission, expected allowed?, by)
    (READ, {"path": "src/a.py"}, None, True, "allow"),
    (READ, {"path": ".env"}, None, False, "rule"),
    (READ, {"path": "config/.env.local"}, None, False, "rule"),
    (READ, {"path": ".env.example"}, None, True, "allow"),
    (READ, {"path": "certs/key.pem"}, None, False, "rule"),
    (READ, {"path": ".env"}, {"read_thing": {"*": "allow"}}, True, "allow"),  # replaces default
    (WRITE, {"path": "a.txt"}, None, False, "headless"),
    (WRITE, {"path": "a.txt"}, {"write_thing": "allow"}, True, "allow"),
    (WRITE, {"path": "src/gen/x.py"}, {"write_thing": {"*": "allow", "src/gen/*": "deny"}},
     False, "rule"),
    (WRITE, {"path": "src/gen/keep.py"},
     {"write_thing": {"*": "deny", "src/gen/*": "allow"}}, True, "allow"),  # last match wins
    (WRITE, {"path": "a.txt"}, {"write_thing": "sometimes"}, False, "headless"),  # typo ignored
    (WRITE, {"path": "a1.txt"}, {"write_thing": {"a?.txt": "allow"}}, True, "allow"),
    (WRITE, {"path": "a12.txt"}, {"write_thing": {"a?.txt": "allow"}}, False, "headless"),
    (MOVE, {"from": "ok.txt", "to": "secret/x"}, {"move_thing": {"*": "allow",
                                                                 "secret/*": "deny"}},
     False, "rule"),  # one denied end denies the move
    (MOVE, {"from": "secret/x", "to": "ok.txt"}, {"move_thing": {"*": "allow",
                                                                 "secret/*": "deny"}},
     False, "rule"),
    (MCP, {}, None, False, "headless"),
    (MCP, {}, {"mcp__*": "deny"}, False, "rule"),
    (MCP, {}, {"mcp__*": "allow"}, True, "allow"),
    (SHELL, {"command": "git status"}, {"shell": {"git status*": "allow"}}, True, "allow"),
    (SHELL, {"command": "git push"}, {"shell": {"git status*": "allow"}}, False, "headless"),
    (SHELL, {"command": "ls\nrm x"}, {"shell": {"ls*": "allow"}}, False, "headless"),
]


@pytest.mark.parametrize("tool,args,permission,allowed,by", CASES)
async def test_rule_table(tmp_path, tool, args, permission, allowed, by):
    decision = await decide(tmp_path, tool, args, permission)
    assert (decision.allowed, decision.by) == (allowed, by), decision


async def test_deny_message_names_the_rule(tmp_path):
    d = await decide(tmp_path, WRITE, {"path": "src/gen/x"},
                     {"write_thing": {"*": "allow", "src/gen/*": "deny"}})
    assert d.message == 'Refused by the permission rule write_thing: "src/gen/*" = deny.'
    d = await decide(tmp_path, WRITE, {"path": "x"}, {"write_thing": "deny"})
    assert d.message == "Refused by the permission rules: write_thing is denied."


async def test_yolo_turns_ask_into_allow_but_never_touches_deny(tmp_path):
    assert (await decide(tmp_path, WRITE, {"path": "a"}, yolo=True)).allowed
    d = await decide(tmp_path, WRITE, {"path": "a"}, {"write_thing": "deny"}, yolo=True)
    assert not d.allowed and d.by == "rule"
    assert not (await decide(tmp_path, READ, {"path": ".env"}, yolo=True)).allowed


async def test_project_rules_only_tighten(tmp_path):
    loose = {"write_thing": {"*": "allow"}}
    d = await decide(tmp_path, WRITE, {"path": "a"}, None, project=loose)
    assert not d.allowed and d.by == "headless"  # the project's allow is ignored
    d = await decide(tmp_path, WRITE, {"path": "db/x"}, {"write_thing": "allow"},
                     project={"write_thing": {"db/*": "deny"}})
    assert not d.allowed and "project rule" in d.message
    d = await decide(tmp_path, WRITE, {"path": "src/x"}, {"write_thing": "allow"},
                     project={"write_thing": {"db/*": "deny"}})
    assert d.allowed


async def test_always_grants_a_pattern_but_never_over_deny(tmp_path):
    from agent.contract.tools import ToolCall
    from agent.loop.gate import Gate

    config, hooks = boot(tmp_path, {"shell": {"*": "ask", "git push*": "deny"}})
    asked = []

    async def approver(request):
        asked.append(request.call.arguments["command"])
        return "always"

    gate = Gate(hooks, config, approver)

    async def run(cmd):
        call = ToolCall("c", "shell", {"command": cmd})
        return await gate.decide(call, SHELL, SHELL.effects(call.arguments), None)

    assert (await run("git status")).allowed
    assert (await run("git status --short")).allowed  # "always" granted "git status *"
    assert (await run("git log")).allowed and asked == ["git status", "git log"]
    assert not (await run("git push origin main")).allowed  # deny wins over the grant
    assert not (await run("git push --force")).allowed
    assert (await run("ls")).allowed and asked == ["git status", "git log", "ls"]


async def test_repeat_guard_asks_on_third_identical_call(tmp_path):
    from agent.contract.tools import ToolCall
    from agent.loop.gate import Gate

    config, hooks = boot(tmp_path)
    asked = []

    async def approver(request):
        asked.append(request.repeating)
        return "no"

    gate = Gate(hooks, config, approver, yolo=True)
    call = ToolCall("c", "read_thing", {"path": "a"})
    results = [(await gate.decide(call, READ, READ.effects(call.arguments), None)).allowed
               for _ in range(3)]
    assert results == [True, True, False] and asked == [True]
    gate.new_turn()
    assert (await gate.decide(call, READ, READ.effects(call.arguments), None)).allowed


def test_policy_explain_cli(tmp_path):
    home = tmp_path / "h"
    home.mkdir()
    (home / "config.toml").write_text('[permission]\ncurrent_time = "deny"\n')
    proc = run_agent_here(["policy", "explain", "current_time", "{}"], home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "decision: deny" in proc.stdout and "current_time is denied" in proc.stdout
    proc = run_agent_here(["policy", "explain", "nosuch"], home=home, cwd=tmp_path)
    assert proc.returncode == 2 and 'no tool named "nosuch"' in proc.stderr


@settings(max_examples=examples(300), deadline=None)
@given(pattern=st.text(max_size=40), subject=st.text(max_size=200))
def test_pattern_matcher_never_crashes_and_is_a_glob(pattern, subject):
    result = perm.matches(pattern, subject)
    assert isinstance(result, bool)
    if "*" not in pattern and "?" not in pattern:
        assert result == (pattern == subject)


def test_pathological_pattern_answers():
    # A backtracking matcher never returns here (the test times out); how fast ours is, against
    # one scan of the subject: bench/pathological_input.py.
    assert not perm.matches("*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 5000)
    assert perm.matches("*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 5000 + "b")


@pytest.mark.parametrize("command,allowed", [
    ("git status", True),
    ("git status && git diff", True),            # both parts allowed: no new prompt
    ("git status && rm -rf build", False),       # one part not allowed: asks
    ("git status; curl x", False),
    ("echo $(git status)", False),               # echo has no rule
    ("sudo git status", False),                  # the prefix is part of the subject
    ("git diff | head", False),
])
async def test_compound_commands_are_judged_part_by_part(tmp_path, command, allowed):
    rules = {"shell": {"*": "ask", "git status*": "allow", "git diff*": "allow"}}
    decision = await decide(tmp_path, SHELL, {"command": command}, rules)
    assert decision.allowed == allowed, decision


async def test_always_on_a_pipeline_grants_each_program(tmp_path):
    from agent.contract.tools import ToolCall
    from agent.loop.gate import Gate

    config, hooks = boot(tmp_path)
    asked = []

    async def approver(request):
        asked.append(request.grant)
        return "always"

    gate = Gate(hooks, config, approver)

    async def run(cmd):
        call = ToolCall("c", "shell", {"command": cmd})
        return (await gate.decide(call, SHELL, SHELL.effects(call.arguments), None)).allowed

    assert await run("make build | grep error")
    assert asked == ["make build *, grep *"]
    assert await run("make build -j4 && grep x y")  # granted, and grep only reads
    assert await run("npm test") and asked == ["make build *, grep *", "npm test *"]
    assert await run("make build; rm x") and len(asked) == 3  # rm was never granted
    assert await run("for f in a b; do make build $f; done") and len(asked) == 3
    assert await run("sudo make build") and asked[-1] == "sudo make build *"


# ---- who let a call run: the tool's ctx.allowed_by --------------------------------------------

@pytest.mark.parametrize("permission,flags,yolo,approver,expected", [
    (None, (), False, None, "policy"),  # the judge alone: nobody said yes
    ({"shell": {"ls *": "allow"}}, (), False, None, "rule"),
    (None, ("shell:ls *",), False, None, "flag"),
    (None, ("shell:ls *",), True, None, "flag"),
    (None, (), True, None, "policy"),  # --yolo turns asks into allows, nothing else
])
async def test_allowed_by_says_who_let_a_read_only_command_run(tmp_path, permission, flags,
                                                               yolo, approver, expected):
    from agent.loop.permission_flags import FlagRules

    config, hooks = boot(tmp_path, permission)
    config.permission_flags = FlagRules.parse(list(flags), []) if flags else None
    decision = await gate_decision(config, hooks, SHELL, {"command": "ls -la"}, yolo=yolo)
    assert decision.allowed and decision.allowed_by == expected


async def test_allowed_by_for_asked_calls_is_the_answer_or_yolo(tmp_path):
    config, hooks = boot(tmp_path)
    said = await gate_decision(config, hooks, SHELL, {"command": "touch x"},
                               approver=always_yes)
    assert said.allowed and said.allowed_by == "user"
    forced = await gate_decision(config, hooks, SHELL, {"command": "touch x"}, yolo=True)
    assert forced.allowed and forced.allowed_by == "yolo"


async def test_an_always_grant_marks_later_read_only_calls_as_granted(tmp_path):
    from agent.contract.tools import ToolCall
    from agent.loop.gate import Gate

    config, hooks = boot(tmp_path)

    async def always(request):
        return "always"

    gate = Gate(hooks, config, always)
    first = await gate.decide(ToolCall("c1", "shell", {"command": "ls && touch x"}), SHELL,
                              SHELL.effects({"command": "ls && touch x"}), None)
    later = await gate.decide(ToolCall("c2", "shell", {"command": "ls -la"}), SHELL,
                              SHELL.effects({"command": "ls -la"}), None)
    assert (first.allowed_by, later.allowed_by) == ("user", "grant")


async def _always_then(tmp_path, first, later, edited=None):
    """Answer "always" to ``first`` (with the patterns ``edited`` when given); return the
    commands asked about and whether each of ``later`` ran."""
    from agent.contract.tools import ToolCall
    from agent.loop.gate import Approval, Gate

    config, hooks = boot(tmp_path, {"shell": {"*": "ask"}})
    asked = []

    async def approver(request):
        asked.append((request.call.arguments["command"], request.grants))
        if edited is not None:
            return Approval("always", grants=edited)
        return "always" if len(asked) == 1 else "no"

    gate = Gate(hooks, config, approver)

    async def run(cmd):
        call = ToolCall("c", "shell", {"command": cmd})
        return (await gate.decide(call, SHELL, SHELL.effects(call.arguments), None)).allowed

    assert await run(first)
    return asked, [await run(cmd) for cmd in later]


async def test_always_on_a_script_grants_the_script_never_the_interpreter(tmp_path):
    asked, ran = await _always_then(tmp_path, "python3 x.py", [
        "python3 x.py --verbose", "python3 x.py", "python3 -m pip install requests",
        "python3 y.py", "python3 x.pyz"])
    assert asked[0] == ("python3 x.py", ("python3 x.py *",))
    assert ran == [True, True, False, False, False]
    assert [a[0] for a in asked[1:]] == ["python3 -m pip install requests", "python3 y.py",
                                         "python3 x.pyz"]


async def test_always_on_git_status_grants_it_and_its_bare_form_only(tmp_path):
    asked, ran = await _always_then(tmp_path, "git status --short", [
        "git status", "git status -uno", "git stash", "git push"])
    assert asked[0][1] == ("git status *",)
    assert ran == [True, True, False, False]


async def test_always_on_a_module_grants_that_module(tmp_path):
    asked, ran = await _always_then(tmp_path, "python3 -m pytest -q", [
        "python3 -m pytest tests/", "python3 -m pip install x", "python3 -c 'import os'"])
    assert asked[0][1] == ("python3 -m pytest *",)
    assert ran == [True, False, False]


async def test_an_interpreter_without_a_script_grants_only_itself(tmp_path):
    asked, ran = await _always_then(tmp_path, "python3", ["python3 x.py", "python3"])
    assert asked[0][1] == ("python3",) and ran == [False, True]


async def test_always_saves_the_patterns_as_the_user_edited_them(tmp_path):
    asked, ran = await _always_then(tmp_path, "make test", ["make test", "make lint"],
                                    edited=("make test",))
    assert asked[0][1] == ("make test *",)  # offered
    assert ran == [True, True] and [a[0] for a in asked] == ["make test", "make lint"]
