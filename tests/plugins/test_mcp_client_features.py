"""What the client answers a server: roots (the workspace), elicitation through the ask panel
(declined headless), progress on the running tool's line, and tool annotations: readOnlyHint
usable in rules (opt-in) and destructiveHint named in the approval."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from clirun import run_agent_here
from fakeprovider import Reply
from mcp_features import (
    assert_sampling_round_trip,
    connected,
    feature_tool,
    features_home,
    features_server,
)

from agent.testing import gate_decision, make_boot, run_tool
from plugins_builtin.mcp import state


def boot(tmp_path: Path, builtins=("mcp",), **file_data):
    ws = tmp_path / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    servers = {"feat": features_server()}
    return make_boot(ws, tmp_path / "home", builtins=list(builtins),
                     file_data={"mcp_servers": servers, **file_data})


@pytest.fixture
def feat(tmp_path):
    config, hooks = boot(tmp_path)
    with connected(config, hooks):
        yield config, hooks


tool = feature_tool


def session_with(asker):
    return SimpleNamespace(runtime=SimpleNamespace(asker=asker))


async def test_roots_are_the_workspace(feat):
    config, _ = feat
    result = await run_tool(tool(config, "whereami"), {}, config)
    assert json.loads(result.output) == [config.workspace.resolve().as_uri()]


async def test_elicitation_goes_to_the_ask_panel_and_back(feat):
    config, _ = feat
    asked = []

    async def asker(question, options, multiple):
        asked.append((question, [o["label"] for o in options]))
        await asyncio.sleep(0)  # answered on this (the front end's) loop
        return "blue"

    result = await run_tool(tool(config, "pick_color"), {}, config,
                            session=session_with(asker))
    assert json.loads(result.output) == {"action": "accept", "content": {"color": "blue"}}
    assert asked == [("The MCP server feat asks: Which colour should the theme use?\ncolour",
                      ["red", "blue"])]


async def test_elicitation_with_nobody_to_ask_is_declined(feat):
    config, _ = feat
    result = await run_tool(tool(config, "pick_color"), {}, config)
    assert json.loads(result.output)["action"] == "decline"
    dismissed = await run_tool(tool(config, "pick_color"), {}, config,
                               session=session_with(lambda q, o, m: asyncio.sleep(0)))
    assert json.loads(dismissed.output)["action"] == "decline"


async def test_progress_reaches_the_running_tools_output(feat):
    config, _ = feat
    lines: list[str] = []
    result = await run_tool(tool(config, "slow"), {}, config, output=lines)
    assert result.output == "slow done"
    await asyncio.sleep(0)  # forwarded with call_soon_threadsafe onto this loop
    assert "".join(lines) == ("[progress 1/3] step 1\n[progress 2/3] step 2\n"
                              "[progress 3/3] step 3\n")


async def test_destructive_hint_is_named_in_the_approval_and_read_only_is_opt_in(tmp_path):
    for trust, peek_allowed in (("ask", False), ("allow", True)):
        config, hooks = boot(tmp_path / trust, mcp_read_only=trust)
        try:
            hooks.tools(config)
            state(config).manager.wait(60)
            asked = []

            async def approver(request, _asked=asked):
                _asked.append(request)
                return False

            peek = await gate_decision(config, hooks, tool(config, "peek"), {},
                                       approver=approver)
            assert peek.allowed is peek_allowed
            assert len(asked) == (0 if peek_allowed else 1)
            wipe = await gate_decision(config, hooks, tool(config, "wipe"), {},
                                       approver=approver,
                                       session=SimpleNamespace(config=config))
            assert not wipe.allowed
            assert ("the MCP server feat marks mcp__feat__wipe as destructive "
                    "(destructiveHint)") in asked[-1].reason
        finally:
            hooks.unconfigure(config)


def test_headless_elicitation_is_declined(tmp_path, fake_provider):
    home, ws = features_home(tmp_path)
    fake_provider.script(Reply.tool_call("mcp__feat__pick_color", {}, id="c1"),
                         Reply.text("ok"))
    proc = run_agent_here(["-p", "pick", "--yolo", "--json", "--provider", "openai",
                           "--base-url", fake_provider.openai_url, "--model", "m"], home=home,
                          cwd=ws, OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    result = next(json.loads(line) for line in proc.stdout.splitlines()
                  if json.loads(line)["type"] == "tool-result")
    assert json.loads(result["output"])["action"] == "decline"


async def test_resources_are_listed_and_read_and_links_point_at_the_reader(feat):
    config, _ = feat
    listing = await run_tool(tool(config, "list_resources"), {}, config)
    assert listing.output.splitlines() == ["memo://notes/today  today  (text/plain)",
                                           "memo://report/1  report 1  (text/markdown)",
                                           "memo://logo.png  logo  (image/png)"]
    made = await run_tool(tool(config, "make_report"), {}, config)
    assert made.output == ("report written\n[resource link: report 1 <memo://report/1>] "
                           "(read it with mcp__feat__read_resource)")
    read = await run_tool(tool(config, "read_resource"), {"uri": "memo://report/1"}, config)
    assert read.output == "[resource memo://report/1]\n# Report\nall green"
    logo = await run_tool(tool(config, "read_resource"), {"uri": "memo://logo.png"}, config)
    assert logo.output == "[resource memo://logo.png: image 1, image/png, 70 bytes]"
    assert [(i.media_type, i.source, i.size) for i in logo.images] == [
        ("image/png", "feat:memo://logo.png", 70)]
    missing = await run_tool(tool(config, "read_resource"), {"uri": "memo://nope"}, config)
    assert missing.is_error and "could not do that" in missing.output


async def test_prompts_become_slash_commands_that_send_the_filled_prompt(feat, tmp_path):
    config, _ = feat
    assert state(config).manager.prompts["feat"][0]["name"] == "review"
    # The next start registers the cached prompts as commands.
    again, hooks = boot(tmp_path)
    try:
        command = hooks.commands(again).get("/mcp__feat__review")
        assert command is not None and command.args == "<file> [focus]"
        sent, errors = [], []
        app = SimpleNamespace(run_prompt=sent.append, error=errors.append)
        await command.run(app, "app.py security")
        await command.run(app, "focus=speed file=db.py")
        await command.run(app, "")
        assert sent == ["Review app.py for security.", "Review db.py for speed."]
        assert errors == ["/mcp__feat__review: missing argument: file"]
    finally:
        hooks.unconfigure(again)


async def test_sampling_goes_through_the_sessions_provider_with_approval(tmp_path,
                                                                         fake_provider):
    config, hooks = boot(tmp_path, builtins=("mcp", "openai", "budget"))
    with connected(config, hooks):
        session = await assert_sampling_round_trip(config, hooks, fake_provider)
        from plugins_builtin.budget import spend

        # Booked like the session's own steps: three requests, the sampling one included.
        assert spend.ledger(session).own.requests == 3


def test_headless_sampling_is_declined_and_no_model_call_is_made(tmp_path, fake_provider):
    home, ws = features_home(tmp_path, tables='[permission]\n"mcp__feat__summarise" = "allow"\n')
    fake_provider.script(Reply.tool_call("mcp__feat__summarise", {}, id="c1"),
                         Reply.text("ok"))
    proc = run_agent_here(["-p", "summarise", "--json", "--provider", "openai",
                           "--base-url", fake_provider.openai_url, "--model", "m"], home=home,
                          cwd=ws, OPENAI_API_KEY="x")
    assert proc.returncode == 0, proc.stderr
    result = next(json.loads(line) for line in proc.stdout.splitlines()
                  if json.loads(line)["type"] == "tool-result")
    assert "declined" in json.loads(result["output"])["error"]
    assert len(fake_provider.requests) == 2  # the turn's two steps, no sampling request
