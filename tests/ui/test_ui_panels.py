"""Panels, pickers, the ask panel, reasoning, settings and plugins hooking into the UI."""

from __future__ import annotations

import asyncio
import logging
import re
import threading

import urwid
from fakeprovider import Reply
from ui_harness import idle, make_app, press, screen, type_text, wait_for

from agent import Effects, HeaderLine, LiveState, Panel, SlashCommand, StatusInfo, Tool, hookimpl
from agent.contract.tools import ToolCall
from agent.loop.gate import ApprovalRequest


async def test_reasoning_is_collapsed_expandable_and_kept_folded_after_the_turn(tmp_path,
                                                                               fake_provider):
    fake_provider.script(Reply(reasoning="step one\nstep two\nstep three\n" * 4,
                               text="the answer", pieces=6, delay=0.08))
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "think", enter=True)
    rows = await wait_for(app, "thinking... ~")
    assert "ctrl-r to expand" in rows
    await press(app, "ctrl r")
    await wait_for(app, "ctrl-r to collapse")
    await wait_for(app, "  step three")
    await wait_for(app, "the answer")
    rows = await idle(app)
    assert "thinking..." not in rows and "ctrl-r" not in rows
    # the turn's reasoning stays in the transcript, folded above its answer
    assert "> thinking  thought for ~" in rows and "ctrl o to expand" in rows
    assert rows.index("> thinking") < rows.index("the answer")
    assert "step two" not in rows
    await press(app, "ctrl o")
    rows = screen(app)
    assert "step two" in rows and rows.index("step one") < rows.index("the answer")


async def test_info_panel_is_dismissed_by_esc(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "/tools", enter=True)
    rows = screen(app)
    assert "┌ tools" in rows and "offered this turn of" in rows and "esc to dismiss" in rows
    await press(app, "esc")
    assert "┌ tools" not in screen(app)


async def test_ask_panel_returns_the_choice_to_the_model(tmp_path, fake_provider):
    question = {"question": "Which **colour**?",
                "options": [{"label": "blue", "detail": "calm"}, {"label": "red"}]}
    fake_provider.script(Reply.tool_call("ask", question, id="q1"), Reply.text("noted"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["ask"])
    app.start()
    await type_text(app, "choose", enter=True)
    rows = await wait_for(app, "agent is asking")
    assert "Which colour?" in rows and "> blue" in rows and "calm" in rows
    assert "type your own answer..." in rows
    await press(app, "down", "enter")
    await wait_for(app, "noted")
    told = [m for m in fake_provider.requests[1].body["messages"] if m["role"] == "tool"][0]
    assert told["content"] == "The user answered: red"  # through runtime.asker (ask plugin)


async def test_ask_panel_free_text_and_esc(tmp_path, fake_provider):
    fake_provider.script(Reply.tool_call("ask", {"question": "Name?"}, id="q1"),
                         Reply.text("ok"),
                         Reply.tool_call("ask", {"question": "Again?"}, id="q2"),
                         Reply.text("ok2"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["ask"])
    app.start()
    await type_text(app, "ask me", enter=True)
    await wait_for(app, "agent is asking")
    await press(app, "up", "enter")  # wraps to "type your own answer..."
    await type_text(app, "Ada Lovelace", enter=True)
    await wait_for(app, "ok")
    await idle(app)
    await type_text(app, "again", enter=True)
    await wait_for(app, lambda: app.modal is not None and "Again?" in screen(app))
    await press(app, "esc")
    await idle(app)
    answers = [[m for m in r.body["messages"] if m["role"] == "tool"][-1]["content"]
               for r in (fake_provider.requests[1], fake_provider.requests[3])]
    assert "Ada Lovelace" in answers[0]
    assert "use your best judgement" in answers[1]


async def test_worker_subagent_approvals_are_labelled(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.approval_guard = 0.0
    app.start()
    tool = Tool("bash", "Run.", lambda a, c: None, effects=lambda a: Effects(command=a["command"]))
    call = ToolCall("c1", "bash", {"command": "make test"}, origin="worker")
    request = ApprovalRequest(call, tool, Effects(command="make test"),
                              "bash may change files", 'bash: "make *"', grants=("make *",))
    answer = asyncio.ensure_future(app.approve(request))
    rows = await wait_for(app, "a worker subagent wants to run bash")
    assert "delegated work, gated by your rules" in rows
    assert 'matched bash: "make *"' in rows and "make test" in rows
    assert "a always (make *)" in rows
    await press(app, "a")  # "always" shows what it would grant first
    rows = await wait_for(app, "always: make *")
    assert "enter always allow these patterns" in rows and not answer.done()
    await press(app, "enter")
    assert await answer == "always"


async def test_model_switch_applies_to_the_next_request(tmp_path, fake_provider):
    fake_provider.script(Reply.text("hi"))
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "/model other-model", enter=True)
    assert "model is now other-model" in screen(app)
    assert screen(app).splitlines()[-1].startswith("other-model  ")
    await type_text(app, "hello", enter=True)
    await idle(app)
    assert fake_provider.requests[-1].body["model"] == "other-model"


async def test_models_picker_lists_the_endpoint_models(tmp_path, fake_provider):
    fake_provider.models = ["zeta-1", "alpha-2"]
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "/models", enter=True)
    rows = await wait_for(app, "Choose a model (2 available)")
    assert rows.index("alpha-2") < rows.index("zeta-1")
    await press(app, "enter")
    await wait_for(app, "model is now alpha-2")


class Broken:
    @hookimpl
    def agent_register_commands(self, register, config):
        def boom(app, args):
            raise RuntimeError("kaput")

        register(SlashCommand("boom", "fails", boom, info=True))

    @hookimpl
    def agent_register_keys(self, keymap):
        keymap.bind("f9", "cost", "show the cost panel")

    @hookimpl
    def agent_render_block(self, block, width, theme):
        if block.kind == "user":
            return urwid.Text("YOU SAID: " + block.text)
        return None


async def test_plugin_renderer_replaces_a_block_and_a_crashing_command_is_contained(
        tmp_path, fake_provider, caplog):
    app = make_app(tmp_path, fake_provider.openai_url, extra=[("broken", Broken())])
    app.start()
    with caplog.at_level(logging.ERROR, logger="agent.ui"):
        await type_text(app, "/boom", enter=True)
    rows = screen(app)
    assert "YOU SAID: /boom" in rows
    assert "error: /boom failed: RuntimeError: kaput" in rows
    assert any("kaput" in str(r.exc_info) for r in caplog.records)
    await press(app, "f9")  # a key a plugin bound to a slash command
    assert "┌ cost" in screen(app)


async def test_key_overrides_from_the_config(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url,
                   file_data={"keys": {"f2": "tools", "ctrl r": "",
                                       "prompt": {"ctrl b": "cursor-left"},
                                       "f3": "no-such-command"}})
    app.start()
    assert app.keymap.get("ctrl r", ["global"]) is None
    assert any('unknown command "no-such-command"' in p for p in app.keymap.problems)
    assert 'unknown command "no-such-command"' in screen(app)  # reported in the header
    await type_text(app, "ab")
    await press(app, "ctrl b")
    assert app.editor.edit_pos == 1
    await press(app, "f2")
    assert "┌ tools" in screen(app)


async def test_mouse_wheel_scrolls_the_transcript_when_enabled(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    for i in range(60):
        app.add("info", f"line {i}")
    assert "line 59" in screen(app)
    assert app.root.mouse_event(app.size, "mouse press", 4, 0, 0, True)
    assert not app.transcript.follow and "line 59" not in screen(app)


class Shelf:
    """A third-party plugin publishing a live panel while a turn runs and status facts."""

    def __init__(self) -> None:
        self.seen: list[LiveState] = []

    @hookimpl
    def agent_live_panels(self, session, state):
        self.seen.append(state)
        if not state.busy:
            return None
        return Panel("shelf", [("dim", f"shelf: {len(session.messages)} books {state.spinner}")])

    @hookimpl
    def agent_status(self, session):
        return StatusInfo(agent="librarian", context_tokens=6_000, context_limit=12_000)

    @hookimpl
    def agent_header_lines(self, config, session):
        return [HeaderLine("shelf: 12 books on file", order=75),
                HeaderLine("shelf: first of all", order=5)]


async def test_a_plugin_publishes_a_live_panel_and_status_facts(tmp_path, fake_provider):
    answered = threading.Event()
    fake_provider.script(Reply.held(answered, reply=Reply.text("slow answer " * 20)))
    shelf = Shelf()
    app = make_app(tmp_path, fake_provider.openai_url, extra=[("shelf", shelf)])
    app.start()
    rows = await wait_for(app, "librarian/")
    assert "50% ctx" in rows.splitlines()[-1]  # the plugin's estimate of its limit
    lines = [r.rstrip() for r in rows.splitlines()]
    # header lines where their order puts them among the UI's own
    assert lines.index("shelf: first of all") == lines.index("agent: librarian  thinking: "
                                                             "medium") - 1
    at = lines.index("shelf: 12 books on file")
    assert next(n for n, r in enumerate(lines) if r.startswith("plugins:")) < at
    assert at < next(n for n, r in enumerate(lines) if r.startswith("approvals:"))
    assert "shelf: 0 books" not in rows and "shelf: 1 books" not in rows
    await type_text(app, "go", enter=True)
    rows = await wait_for(app, "shelf: 1 books")  # during the turn, above the prompt
    panel_row = next(n for n, r in enumerate(rows.splitlines()) if "shelf:" in r)
    prompt_row = next(n for n, r in enumerate(rows.splitlines()) if r.startswith("> type"))
    assert panel_row < prompt_row
    answered.set()
    rows = await idle(app)
    panel = re.compile(r"^shelf: \d+ books \S$")
    assert not any(panel.match(r.rstrip()) for r in rows.splitlines())  # gone after the turn
    assert "slow answer" in rows
    assert any(s.busy for s in shelf.seen) and shelf.seen[-1].busy is False


async def test_a_tools_arguments_are_shown_whole_in_the_dialog(tmp_path, fake_provider):
    """A tool without a diff or a command: its arguments are shown in full, never cut to
    the transcript's one line, so what is approved is what was read."""
    ran = []

    async def run(args, ctx):
        ran.append(args)
        return "sent"

    sender = Tool("send_note", "Send a note.", run,
                  {"type": "object", "properties": {"to": {"type": "string"},
                                                    "body": {"type": "string"}}},
                  effects=lambda a: Effects(opaque=True))

    class Plugin:
        @hookimpl
        def agent_register_tools(self, register, config):
            register(sender)

    body = "please " + "forward everything " * 12 + "and also rm -rf ~ TAIL-END-MARKER"
    fake_provider.script(Reply.tool_call("send_note", {"to": "ops", "body": body}, id="s1"),
                         Reply.text("Not sent."))
    app = make_app(tmp_path, fake_provider.openai_url, extra=[("notes", Plugin())])
    app.approval_guard = 0.0
    app.start()
    await type_text(app, "send it", enter=True)
    rows = await wait_for(app, "TAIL-END-MARKER")
    assert "rm -rf ~" in " ".join(rows.split())
    await press(app, "n")
    await wait_for(app, "Not sent.")
    assert ran == []
