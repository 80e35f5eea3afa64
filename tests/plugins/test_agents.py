"""Agent variants, thinking levels, /agent and /think, against the fake provider."""

from __future__ import annotations

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

from agent import hookimpl
from agent.testing import collect, make_boot, make_session

BUILTINS = ["openai", "files", "bash", "git", "time", "agents", "subagents", "ask"]
MUTATING = {"write_file", "edit_file", "multi_edit", "apply_patch", "move_file",
            "delete_file", "bash"}


async def approve(request):
    return "yes"


def boot(tmp_path, **flags):
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return make_boot(ws, tmp_path / "home", builtins=BUILTINS, flags=flags)


def offered(request) -> dict[str, dict]:
    return {t["function"]["name"]: t["function"] for t in request.body.get("tools", [])}


def system_of(request) -> str:
    return request.body["messages"][0]["content"]


# ---- startup ----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["flag", "env"])
def test_unknown_agent_fails_at_startup_with_the_list(tmp_path, how):
    args = ["-p", "hi"] + (["--agent", "turbo"] if how == "flag" else [])
    env = {"AGENT_AGENT": "turbo"} if how == "env" else {}
    proc = run_agent_here(args, home=tmp_path / "home", cwd=tmp_path, **env)
    assert proc.returncode == 2
    assert ('agent: Unknown agent "turbo". Available: default, quick, deep, plan, review'
            in proc.stderr)


# ---- what a variant sends ------------------------------------------------------------------


async def test_deep_sends_max_thinking_its_prompt_and_takes_80_steps(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, agent="deep")
    fake_provider.script(Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    assert (session.thinking, session.max_steps, session.data["agent"]) == ("max", 80, "deep")
    await collect(session, "hard problem")
    request = fake_provider.requests[0]
    assert request.body["reasoning_effort"] == "xhigh"
    assert "Agent: deep." in system_of(request)
    assert "more than one" in system_of(request)


async def test_explicit_think_flag_wins_over_the_variant(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, agent="deep", thinking="low")
    fake_provider.script(Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    await collect(session, "hi")
    assert fake_provider.requests[0].body["reasoning_effort"] == "low"
    assert "Agent: deep." in system_of(fake_provider.requests[0])
    assert session.max_steps == 80


async def test_default_variant_adds_no_appendix(tmp_path, fake_provider):
    config, hooks = boot(tmp_path)
    fake_provider.script(Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    await collect(session, "hi")
    request = fake_provider.requests[0]
    # The default level, to a model not known to reason ("m"): no reasoning parameter.
    assert "reasoning_effort" not in request.body
    assert "Agent:" not in system_of(request)
    assert MUTATING <= set(offered(request))


async def test_quick_stops_at_twelve_steps(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, agent="quick")
    fake_provider.script(*[Reply.tool_call("current_time", {}, id=f"c{i}") for i in range(13)])
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events = await collect(session, "loop")
    assert events[-1].reason == "max_steps" and events[-1].steps == 12
    assert len(fake_provider.requests) == 12
    # Thinking off is never sent as "none" to a model not known to reason ("m").
    assert "reasoning_effort" not in fake_provider.requests[0].body
    assert "Agent: quick." in system_of(fake_provider.requests[0])


async def test_max_steps_flag_wins_over_the_variant(tmp_path, fake_provider):
    config, hooks = boot(tmp_path, agent="quick", max_steps=2)
    fake_provider.script(*[Reply.tool_call("current_time", {}, id=f"c{i}") for i in range(3)])
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events = await collect(session, "loop")
    assert events[-1].reason == "max_steps" and len(fake_provider.requests) == 2


@pytest.mark.parametrize("name", ["plan", "review"])
async def test_read_only_variants_offer_no_mutating_tool_and_no_worker(tmp_path, fake_provider,
                                                                       name):
    config, hooks = boot(tmp_path, agent=name)
    fake_provider.script(Reply.tool_call("write_file", {"path": "x.txt", "content": "x"},
                                         id="w1"),
                         Reply.text("I cannot write."))
    session = make_session(config, hooks, base_url=fake_provider.openai_url, approver=approve)
    events = await collect(session, "change things")
    request = fake_provider.requests[0]
    tools = offered(request)
    assert not MUTATING & set(tools)
    assert {"read_file", "grep", "git_diff", "task"} <= set(tools)
    assert tools["task"]["parameters"]["properties"]["kind"]["enum"] == ["explore", "review"]
    assert "you change nothing" in system_of(request)
    assert request.body["reasoning_effort"] == "high"
    # A call to a withheld tool is refused as unknown, and nothing is written.
    error = next(e for e in events if e.type == "tool-error")
    assert "Unknown tool: write_file" in error.error
    assert not (config.workspace / "x.txt").exists()


async def test_worker_is_offered_in_default_with_an_approver(tmp_path, fake_provider):
    config, hooks = boot(tmp_path)
    fake_provider.script(Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url, approver=approve)
    await collect(session, "hi")
    kinds = offered(fake_provider.requests[0])["task"]["parameters"]["properties"]["kind"]
    assert kinds["enum"] == ["explore", "review", "worker"]


# ---- /agent and /think ------------------------------------------------------------------------


class Console:
    """The slash-command caller: only a session (a front end without info/notice)."""

    def __init__(self, session) -> None:
        self.session = session


async def test_agent_command_switches_variant_for_the_next_request(tmp_path, fake_provider):
    config, hooks = boot(tmp_path)
    commands = hooks.commands(config)
    fake_provider.script(Reply.text("one"), Reply.text("two"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url, approver=approve)
    await collect(session, "first")
    line = commands.get("agent").run(Console(session), "plan")
    assert line.startswith("agent: plan  thinking: high") and "read-only" in line
    await collect(session, "second")
    first, second = fake_provider.requests
    assert "write_file" in offered(first) and "write_file" not in offered(second)
    assert second.body["reasoning_effort"] == "high"
    assert session.data["agent"] == "plan"


async def test_think_command_sets_the_level_and_survives_agent_switches(tmp_path,
                                                                        fake_provider):
    config, hooks = boot(tmp_path)
    commands = hooks.commands(config)
    fake_provider.script(Reply.text("one"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    console = Console(session)
    assert commands.get("think").run(console, "") == (
        "thinking: medium  (levels: off, low, medium, high, max)")
    assert commands.get("think").run(console, "huge").startswith(
        'Unknown thinking level "huge". Available: off, low')
    assert commands.get("think").run(console, "low") == "thinking: low"
    commands.get("agent").run(console, "deep")
    assert session.max_steps == 80 and session.thinking == "low"
    await collect(session, "go")
    assert fake_provider.requests[0].body["reasoning_effort"] == "low"


def test_agent_command_lists_variants_and_refuses_unknown_names(tmp_path):
    config, hooks = boot(tmp_path)
    commands = hooks.commands(config)
    from agent.loop.session import Runtime, Session

    session = Session(Runtime(config, hooks, hooks.tools(config), provider=None))
    listing = commands.get("agent").run(Console(session), "")
    assert listing.splitlines()[0] == "agent: default  thinking: medium  steps: 50"
    assert [ln.split()[1] for ln in listing.splitlines()[1:] if ln.startswith("*")] == [
        "default"]
    assert commands.get("agent").run(Console(session), "turbo") == (
        'Unknown agent "turbo". Available: default, quick, deep, plan, review')
    assert session.data["agent"] == "default"


def test_agent_command_uses_the_ui_notice_when_there_is_one(tmp_path):
    config, hooks = boot(tmp_path)
    from agent.loop.session import Runtime, Session

    shown: list[str] = []

    class Ui(Console):
        def notice(self, text):
            shown.append(text)

    session = Session(Runtime(config, hooks, hooks.tools(config), provider=None))
    assert hooks.commands(config).get("think").run(Ui(session), "max") is None
    assert shown == ["thinking: max"] and session.thinking == "max"


# ---- the session-start hook --------------------------------------------------------------------


class StepLimiter:
    @hookimpl
    def agent_session_start(self, session):
        session.max_steps = 1
        session.data["started_by"] = session.origin


async def test_agent_session_start_can_set_up_a_new_session(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["openai", "time"],
                              extra=[("limiter", StepLimiter())])
    fake_provider.script(Reply.tool_call("current_time", {}), Reply.text("never sent"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    events = await collect(session, "go")
    assert session.data["started_by"] == "model"
    assert events[-1].reason == "max_steps" and len(fake_provider.requests) == 1
