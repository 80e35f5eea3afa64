"""Plugins wired into the UI, keys typed into the real root widget against the fake provider:
the ask panel, the task list, subagent progress, the status bar, /cost, the startup header."""

from __future__ import annotations

import asyncio
import threading

from fakeprovider import Reply
from ui_harness import idle, make_app, press, screen, type_text, wait_for

from agent import hookimpl
from agent.boot.runtime import Boot
from agent.testing import make_boot
from agent.ui.app import App
from plugins_builtin.budget import spend


def tool_message(request) -> str:
    return [m for m in request.body["messages"] if m["role"] == "tool"][-1]["content"]


def panel_rows(rows: str, first: str, count: int) -> list[str]:
    """``count`` screen rows starting at the one that starts with ``first``."""
    lines = [r.rstrip() for r in rows.splitlines()]
    start = next(i for i, r in enumerate(lines) if r.startswith(first))
    return lines[start:start + count]


# ---- the ask panel ----------------------------------------------------------------------------


async def test_ask_multi_select_with_space_and_submit_reaches_the_next_request(
        tmp_path, fake_provider):
    question = {"question": "Which checks?", "multiple": True,
                "options": [{"label": "lint", "detail": "ruff, fast"},
                            {"label": "types", "detail": "mypy, slow"},
                            {"label": "tests"}]}
    fake_provider.script(Reply.tool_call("ask", question, id="q1"), Reply.text("running them"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["ask"])
    app.start()
    await type_text(app, "check it", enter=True)
    rows = await wait_for(app, "agent is asking")
    assert "> [ ] lint  (recommended)" in rows and "ruff, fast" in rows
    assert "mypy, slow" not in rows  # details show for the highlighted option only
    assert "type your own answer..." in rows and "-- submit 0 --" in rows
    await press(app, " ", "down")
    rows = screen(app)
    assert "mypy, slow" in rows and "ruff, fast" not in rows
    await press(app, " ")
    rows = await wait_for(app, "-- submit 2 --")
    assert "  [x] lint" in rows and "> [x] types" in rows
    await press(app, "up", "up", "enter")  # past the top wraps to "-- submit 2 --"
    await wait_for(app, "running them")
    await idle(app)
    assert tool_message(fake_provider.requests[1]) == "The user chose: lint; types"


async def test_ask_dismissed_with_esc_tells_the_model(tmp_path, fake_provider):
    fake_provider.script(Reply.tool_call("ask", {"question": "Tabs or spaces?"}, id="q1"),
                         Reply.text("spaces then"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["ask"])
    app.start()
    assert app.runtime.asker is not None  # the ask plugin's channel, set by the UI
    await type_text(app, "format", enter=True)
    await wait_for(app, lambda: app.modal is not None)  # the panel, not just the tool line
    assert "Tabs or spaces?" in screen(app)
    await press(app, "esc")
    await idle(app)
    assert tool_message(fake_provider.requests[1]) == \
        "The user dismissed this; use your best judgement."


# ---- the task list ----------------------------------------------------------------------------


def todo_call(*statuses: str, id: str) -> Reply:
    names = ["parse", "wire", "ship"]
    todos = [{"content": n, "status": s} for n, s in zip(names, statuses, strict=True)]
    if "blocked" in statuses:
        todos[statuses.index("blocked")]["note"] = "no key"
    return Reply.tool_call("todo_write", {"todos": todos}, id=id)


async def test_task_list_panel_follows_todo_write_and_hides_when_all_done(
        tmp_path, fake_provider):
    seen_blocked, seen_done = threading.Event(), threading.Event()
    fake_provider.script(todo_call("done", "in_progress", "blocked", id="w1"),
                         Reply.held(seen_blocked, reply=Reply.text("working on it")),
                         todo_call("done", "done", "done", id="w2"),
                         Reply.held(seen_done, reply=Reply.text("all shipped")))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["todos"])
    app.start()
    assert "tasks  " not in screen(app)  # no list, no panel
    await type_text(app, "plan it", enter=True)
    rows = await wait_for(app, "1/3  1 blocked")
    bar = "#" * 13 + "." * 27  # 1 of 3 done: 13 of 40
    assert panel_rows(rows, "tasks  ", 4) == [f"tasks  {bar}  1/3  1 blocked",
                                              "  [x] parse", "  [~] wire", "  [!] ship (no key)"]
    seen_blocked.set()
    rows = await idle(app)
    assert "1/3  1 blocked" in rows  # unfinished: it stays between turns
    await type_text(app, "finish", enter=True)
    await wait_for(app, "tasks  " + "#" * 40 + "  3/3")
    seen_done.set()
    rows = await idle(app)
    assert "tasks  " not in rows  # all done: gone after the turn
    assert app.session.data["todos"][2] == {"content": "ship", "status": "done"}


# ---- subagents --------------------------------------------------------------------------------


async def test_subagent_panel_during_the_turn_cleared_at_its_end(tmp_path, fake_provider):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "config.py").write_text("def load_config():\n    pass\n")
    task = {"description": "find the loader", "prompt": "Where is load_config defined?"}
    seen_step, seen_done = threading.Event(), threading.Event()
    fake_provider.script(
        Reply.tool_call("task", task, id="t1"),
        Reply.tool_call("grep", {"pattern": "load_config"}, id="g1"),      # the subagent
        Reply.held(seen_step, reply=Reply.text("config.py:1 defines it")),  # the subagent
        Reply.held(seen_done, reply=Reply.text("It is in config.py.")))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["files", "subagents"])
    app.start()
    await type_text(app, "where is the loader?", enter=True)
    rows = await wait_for(app, "    grep(load_config)")
    lines = [r.rstrip() for r in rows.splitlines()]
    at = lines.index("    grep(load_config)")
    assert lines[at - 1][1:].startswith(" explore: find the loader  ")  # a spinner first
    assert lines[at - 1].endswith(("1 step", "2 steps"))
    assert "| explore:" not in rows  # the task call's raw output is not shown as well
    seen_step.set()
    rows = await wait_for(app, "* explore: find the loader  2 steps")
    seen_done.set()
    rows = await idle(app)
    assert "grep(load_config)" not in rows and "find the loader  2 steps" not in rows
    assert "It is in config.py." in rows


async def test_worker_approval_is_labelled_in_the_dialog(tmp_path, fake_provider):
    task = {"description": "make the file", "prompt": "Create notes.txt", "kind": "worker"}
    fake_provider.script(
        Reply.tool_call("task", task, id="t1"),
        Reply.tool_call("write_file", {"path": "notes.txt", "content": "hi\n"}, id="w1"),
        Reply.text("created notes.txt"),
        Reply.text("Done."))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["files", "subagents"])
    app.approval_guard = 0.0
    app.start()
    await type_text(app, "delegate", enter=True)
    rows = await wait_for(app, "a worker subagent wants to run write_file")
    assert "worker (writes): make the file" in rows  # the subagent panel stays visible
    await press(app, "y")
    await idle(app)
    assert (app.workspace / "notes.txt").read_text() == "hi\n"


# ---- status bar and /cost ---------------------------------------------------------------------


USAGE_1 = {"input_tokens": 1000, "output_tokens": 100}   # $0.00225 at gpt-5 prices
USAGE_2 = {"input_tokens": 2000, "output_tokens": 200}   # $0.0045


async def test_status_bar_and_cost_panel_split_the_session_and_its_subagents(
        tmp_path, fake_provider):
    task = {"description": "count files", "prompt": "How many files?"}
    fake_provider.script(Reply.tool_call("task", task, id="t1", usage=USAGE_1),
                         Reply.text("3 files", usage=USAGE_2),
                         Reply.text("There are 3.", usage=USAGE_1))
    app = make_app(tmp_path, fake_provider.openai_url,
                   builtins=["files", "subagents", "agents", "prune"],
                   flags={"model": "gpt-5", "max_spend_usd": 5.0, "agent": "deep"})
    app.start()
    status = screen(app).splitlines()[-1]
    assert status.startswith("gpt-5  deep/max  ") and status.rstrip().endswith("$0.00 / $5.00")
    await type_text(app, "count", enter=True)
    await wait_for(app, "There are 3.")
    rows = await idle(app)
    book = spend.ledger(app.session)
    assert (book.own.usd, book.subagents.usd) == (0.0045, 0.0045)
    pruned = app.session.data["prune"]
    pct = pruned["estimate"] * 100 // pruned["threshold"]
    assert rows.splitlines()[-1].rstrip().endswith(f"  {pct}% ctx  $0.0090 / $5.00")
    await type_text(app, "/cost", enter=True)
    rows = screen(app)
    assert "┌ cost" in rows
    body = [r.strip("│ ").rstrip() for r in rows.splitlines()]
    assert "session: 2,000 in / 200 out tokens, 2 requests - $0.0045" in body
    assert "subagents: 2,000 in / 200 out tokens, 1 requests - $0.0045" in body
    assert "total: 4,000 in / 400 out tokens, 3 requests - $0.0090" in body
    assert "cap: $0.0090 of $5.00 (0 %)" in body
    assert "model: gpt-5" in body
    assert (f"context: ~{pruned['estimate']:,} tokens in the last request (system prompt, "
            f"tools and history; {pct} % of the {pruned['threshold']:,}-token compaction "
            "threshold)") in " ".join(body)  # a long line: it wraps in the panel
    assert "agent: deep  thinking: max" in body


async def test_unpriced_model_says_so(tmp_path, fake_provider):
    fake_provider.script(Reply.text("hi"))
    app = make_app(tmp_path, fake_provider.openai_url)  # model "m" has no price
    app.start()
    await type_text(app, "hello", enter=True)
    rows = await idle(app)
    assert rows.splitlines()[-1].rstrip().endswith("% ctx  unpriced")
    await type_text(app, "/cost", enter=True)
    assert "session: 10 in / 5 out tokens, 1 requests - unpriced  (m is unpriced)" in screen(app)


class HouseLedger:
    """A third-party spending ledger standing in for the budget plugin."""

    def __init__(self) -> None:
        self.output_tokens = 0

    @hookimpl
    def agent_request_done(self, session, model, usage, nested):
        if usage is not None:
            self.output_tokens += usage.output_tokens

    @hookimpl
    def agent_session_spent(self, session):
        return self.output_tokens * 0.01, False


async def test_the_status_bar_shows_the_cost_plugin_s_ledger_and_nothing_without_one(
        tmp_path, fake_provider):
    fake_provider.script(Reply.text("hi", usage={"input_tokens": 10, "output_tokens": 42}),
                         Reply.text("again", usage={"input_tokens": 10, "output_tokens": 42}))
    house = HouseLedger()
    shown = []
    for name, extra in (("house", [("house", house)]), ("none", [])):
        ws, home = tmp_path / name / "ws", tmp_path / name / "home"
        ws.mkdir(parents=True)
        home.mkdir()
        config, hooks = make_boot(ws, home, builtins=["openai", "commands"], extra=extra,
                                  flags={"max_retries": 0, "provider": "openai", "model": "m",
                                         "base_url": fake_provider.openai_url})
        config.env_values["api_key"] = "x"
        app = App(Boot(config, config.plugins, hooks, None))
        app.size = (100, 30)
        app.start()
        await type_text(app, "hello", enter=True)
        await wait_for(app, "hi" if name == "house" else "again")
        shown.append((await idle(app)).splitlines()[-1].rstrip())
    assert house.output_tokens == 42
    assert shown[0].endswith("% ctx  $0.42")
    assert shown[1].endswith("% ctx")  # no ledger, no figure (not "unpriced", not "$0.00")


def test_exactly_one_cost_command_with_every_plugin(tmp_path):
    config, hooks = make_boot(tmp_path, tmp_path / "home")
    seen = []
    hooks.pm.hook.agent_register_commands(
        register=lambda cmd: seen.append((cmd.name, cmd.plugin)), config=config)
    try:
        assert [name for name, _ in seen].count("cost") == 1
        assert hooks.commands(config).get("cost").plugin == "budget"
    finally:
        hooks.unconfigure(config)


# ---- the startup header -----------------------------------------------------------------------


HEADER_PLUGINS = ["instructions", "skills", "memory", "mcp"]


def header_lines(app) -> list[str]:
    return app.transcript.walker[0].block.text.splitlines()


async def test_header_names_instructions_skills_memory_mcp_and_yolo(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "AGENTS.md").write_text("# notes\nrun make test\n")
    app = make_app(tmp_path, fake_provider.openai_url, builtins=HEADER_PLUGINS,
                   flags={"yolo": True, "mcp": False})
    app.start()
    lines = header_lines(app)
    assert lines[1:3] == ["agent: default  thinking: medium", f"cwd: {ws}"]
    assert lines[3:5] == ["instructions: AGENTS.md",
                          "skills: 9 (commit, debug, migrate, perf, refactor, review, security, "
                          "test, verify)"]
    assert lines[5].startswith("plugins: ")
    assert lines[6:] == ["memory: 0 notes about this project", "mcp: off (--no-mcp)",
                         "approvals: OFF (--yolo), but deny rules and the guard still apply",
                         "sandbox: workspace-write (bwrap), network off unless approved per "
                         "command",
                         "tool sets: core, edit-plus, git", "/help for commands"]


async def test_header_without_instructions_with_mcp_servers_and_default_approvals(
        tmp_path, fake_provider):
    (tmp_path / "ws" / ".git").mkdir(parents=True)
    servers = {"docs": {"url": "ftp://example.invalid"}, "tools": {"url": "ftp://x"}}
    app = make_app(tmp_path, fake_provider.openai_url, builtins=HEADER_PLUGINS,
                   file_data={"mcp_servers": servers})
    try:
        app.start()
        lines = header_lines(app)
        assert lines[3] == "no AGENTS.md found - /init writes one"
        assert lines[6:] == [
            "memory: 0 notes about this project", "mcp: 2 configured",
            "mcp docs failed: url must start with http:// or https://",
            "mcp tools failed: url must start with http:// or https://",
            "approvals: asks before writes, edits, commands, network and MCP tools",
            "sandbox: workspace-write (bwrap), network off unless approved per command",
            "tool sets: core, edit-plus, git", "/help for commands"]
        assert "no AGENTS.md found - /init writes one" in screen(app)
    finally:
        app.hooks.unconfigure(app.config)
        await asyncio.sleep(0)
