"""One test per hook: each fails if the core stops calling the hook as documented."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from clirun import run_agent_here
from fakeprovider import Reply

from agent import (
    NO_EFFECTS,
    ConfigError,
    Effects,
    Option,
    SlashCommand,
    Tool,
    ToolResult,
    Verdict,
    hookimpl,
)
from agent.contract import events as ev
from agent.contract.blocks import Block
from agent.testing import collect, make_boot, make_session


def boot_with(tmp_path, plugin, **kw):
    ws = tmp_path / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    return make_boot(ws, tmp_path / "home", builtins=["openai", "time"],
                     extra=[("probe", plugin)], **kw)


def writer_tool(calls):
    async def run(args, ctx):
        ctx.resolve(args["path"]).write_text("x")
        calls.append(args["path"])
        return "wrote"

    return Tool("put", "write a file", run,
                {"type": "object", "properties": {"path": {"type": "string"}}},
                effects=lambda a: Effects(writes=(a["path"],)))


def test_agent_addoption_declares_a_config_key(tmp_path):
    class P:
        @hookimpl
        def agent_addoption(self, options):
            options.add(Option("probe_level", type="int", default=7, env="PROBE_LEVEL"))

    config, _ = boot_with(tmp_path, P(), file_data={"probe_level": 9})
    assert config.get("probe_level") == 9
    config2, _ = boot_with(tmp_path / "b", P())
    assert config2.get("probe_level") == 7
    with pytest.raises(ConfigError, match="'probe_level' must be an integer"):
        boot_with(tmp_path / "c", P(), file_data={"probe_level": "high"})


def test_agent_configure_can_stop_startup(tmp_path, fake_provider):
    site = tmp_path / "site"
    site.mkdir()
    (site / "strict.py").write_text('''"""Refuses to start."""
from agent import hookimpl, ConfigError
@hookimpl
def agent_configure(config):
    raise ConfigError("strict: set probe_mode in config.toml")
''')
    info = site / "strict-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: strict\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[agent.plugins]\nstrict = strict\n")
    proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url",
                           fake_provider.openai_url], home=tmp_path / "h", cwd=tmp_path,
                          PYTHONPATH=str(site), OPENAI_API_KEY="x")
    assert proc.returncode == 2 and "strict: set probe_mode" in proc.stderr
    assert fake_provider.requests == []


def test_agent_unconfigure_runs_at_exit(tmp_path, fake_provider):
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "closed.txt"
    (site / "closer.py").write_text(f'''"""Writes a marker when agent exits."""
from pathlib import Path
from agent import hookimpl
@hookimpl
def agent_unconfigure(config):
    Path({str(marker)!r}).write_text("closed")
''')
    info = site / "closer-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: closer\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[agent.plugins]\ncloser = closer\n")
    fake_provider.script(Reply.text("ok"))
    proc = run_agent_here(["-p", "hi", "--provider", "openai", "--base-url",
                           fake_provider.openai_url, "--model", "m"], home=tmp_path / "h",
                          cwd=tmp_path, PYTHONPATH=str(site), OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text() == "closed"


async def test_agent_register_providers_and_select_provider(tmp_path):
    from agent.contract.messages import Message, TextPart
    from agent.contract.providers import ProviderSpec, StepFinished, TextDelta, Usage

    class Echo:
        label = "echo"

        def __init__(self, settings):
            self.settings = settings

        async def stream(self, request):
            text = "echo: " + request.messages[-1].text
            yield TextDelta(text)
            yield StepFinished(Message("assistant", [TextPart(text)]), Usage(1, 1))

        async def list_models(self):
            return ["echo-1"]

    wrapped = []

    class P:
        @hookimpl
        def agent_register_providers(self, register, config):
            register(ProviderSpec("echo", Echo, keyless=True, default_model="echo-1"))

        @hookimpl(wrapper=True)
        def agent_select_provider(self, config, providers, settings):
            provider = yield
            wrapped.append(provider.label)
            return provider

    config, hooks = boot_with(tmp_path, P())
    session = make_session(config, hooks, provider="echo", model="echo-1")
    events = await collect(session, "ping")
    assert "".join(e.text for e in events if isinstance(e, ev.TextEvent)) == "echo: ping"
    assert wrapped == ["echo"]


async def test_agent_offered_tools_narrows_the_request(tmp_path, fake_provider):
    class P:
        @hookimpl
        def agent_offered_tools(self, tools, session):
            return [t for t in tools if t.name != "current_time"]

    config, hooks = boot_with(tmp_path, P())
    fake_provider.script(Reply.text("ok"))
    await collect(make_session(config, hooks, base_url=fake_provider.openai_url), "hi")
    tools = fake_provider.requests[0].body.get("tools", [])
    assert "current_time" not in {t["function"]["name"] for t in tools}


async def test_agent_prepare_request_changes_only_the_wire(tmp_path, fake_provider):
    class P:
        @hookimpl
        def agent_prepare_request(self, request, session):
            return replace(request, system=request.system + "\nPREPARED")

    config, hooks = boot_with(tmp_path, P())
    fake_provider.script(Reply.text("ok"))
    session = make_session(config, hooks, base_url=fake_provider.openai_url)
    await collect(session, "hi")
    assert fake_provider.requests[0].body["messages"][0]["content"].endswith("PREPARED")
    assert session.messages[0].text == "hi"


@pytest.mark.parametrize("mode", ["deny", "raise"])
async def test_agent_guard_tool_call_denies_even_with_yolo(tmp_path, fake_provider, mode):
    calls: list[str] = []

    class P:
        @hookimpl
        def agent_register_tools(self, register, config):
            register(writer_tool(calls))

        @hookimpl
        def agent_guard_tool_call(self, call, effects, session):
            if any(p.startswith("locked/") for p in effects.writes):
                if mode == "raise":
                    raise RuntimeError("guard crashed")
                return Verdict.deny("locked/ is off limits; write elsewhere")
            return None

    config, hooks = boot_with(tmp_path, P(), flags={"yolo": True})
    fake_provider.script(Reply(tool_calls=[("put", {"path": "locked/a"}, "c1"),
                                           ("put", {"path": "free.txt"}, "c2")]),
                         Reply.text("ok"))
    (config.workspace / "locked").mkdir()
    events = await collect(make_session(config, hooks, base_url=fake_provider.openai_url),
                           "write")
    denied = [e for e in events if isinstance(e, ev.ToolDeniedEvent)]
    assert [d.id for d in denied] == ["c1"] and denied[0].by == "guard"
    assert ("off limits" if mode == "deny" else "guard crashed") in denied[0].reason
    assert calls == ["free.txt"] and not (config.workspace / "locked/a").exists()


def test_agent_register_commands_and_keys(tmp_path):
    class P:
        @hookimpl
        def agent_register_commands(self, register, config):
            register(SlashCommand("probe", "probe things", lambda app, args: "probed " + args,
                                  aliases=("pr",)))

        @hookimpl
        def agent_register_keys(self, keymap):
            keymap.bind("f9", "probe")

    config, hooks = boot_with(tmp_path, P())
    registry = hooks.commands(config)
    assert registry.get("/pr").run(None, "x") == "probed x"
    assert registry.get("probe").plugin == "probe"

    class Keymap:
        def __init__(self):
            self.bound = {}

        def bind(self, key, command, help=""):
            self.bound[key] = command

    keymap = Keymap()
    hooks.register_keys(keymap)
    assert keymap.bound["f9"] == "probe"


def test_agent_register_cli_commands(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "hello_cmd.py").write_text('''"""Adds agent hello."""
from agent import hookimpl
def hello(argv, boot):
    print("hello", *argv, boot.config.workspace.name)
    return 5
@hookimpl
def agent_register_cli_commands(register):
    register("hello", hello, "say hello")
''')
    info = site / "hello_cmd-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hello_cmd\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[agent.plugins]\nhello_cmd = hello_cmd\n")
    ws = tmp_path / "proj"
    ws.mkdir()
    proc = run_agent_here(["hello", "world"], home=tmp_path / "h", cwd=ws, PYTHONPATH=str(site))
    assert proc.returncode == 5 and proc.stdout.strip() == "hello world proj"


def test_agent_render_block_first_result_wins(tmp_path):
    class P:
        @hookimpl
        def agent_render_block(self, block, width, theme):
            return f"<{block.kind}:{block.text}:{width}>" if block.kind == "shout" else None

    config, hooks = boot_with(tmp_path, P())
    assert hooks.render_block(Block("shout", "hi"), 40, None) == "<shout:hi:40>"


async def test_agent_tool_result_redacts_before_the_model_sees_it(tmp_path, fake_provider):
    class P:
        @hookimpl
        def agent_register_tools(self, register, config):
            async def leak(args, ctx):
                return "token=SECRET123"
            register(Tool("leak", "leak", leak, effects=lambda a: NO_EFFECTS))

        @hookimpl
        def agent_tool_result(self, call, result, session):
            return ToolResult(result.output.replace("SECRET123", "[redacted]"))

    config, hooks = boot_with(tmp_path, P())
    fake_provider.script(Reply.tool_call("leak", {}, id="c1"), Reply.text("ok"))
    await collect(make_session(config, hooks, base_url=fake_provider.openai_url), "go")
    body = json.dumps(fake_provider.requests[1].body)
    assert "[redacted]" in body and "SECRET123" not in body


async def test_agent_event_sees_coarse_events_only(tmp_path, fake_provider):
    seen: list[str] = []

    class P:
        @hookimpl
        def agent_event(self, event, session):
            seen.append(event.type)

    config, hooks = boot_with(tmp_path, P())
    fake_provider.script(Reply.tool_call("current_time", {}, id="c1"), Reply("fine", pieces=5))
    await collect(make_session(config, hooks, base_url=fake_provider.openai_url), "go")
    assert seen == ["turn-start", "tool-result", "done"]


async def test_register_tools_and_prompt_fragments_reach_the_wire(tmp_path, fake_provider):
    from agent import Fragment

    class P:
        @hookimpl
        def agent_register_tools(self, register, config):
            register(writer_tool([]))

        @hookimpl
        def agent_prompt_fragments(self, session):
            return [Fragment("zz", "LAST", order=999), Fragment("aa", "FIRST-ISH", order=1)]

    config, hooks = boot_with(tmp_path, P())
    fake_provider.script(Reply.text("ok"))
    await collect(make_session(config, hooks, base_url=fake_provider.openai_url), "go")
    system = fake_provider.requests[0].body["messages"][0]["content"]
    assert system.index("FIRST-ISH") < system.index("LAST") and system.endswith("LAST")
    assert "put" in {t["function"]["name"] for t in fake_provider.requests[0].body["tools"]}
