"""Pickers: /resume, /agent, /think and /model as arrow-and-enter lists (typing filters)."""

from __future__ import annotations

from fakeprovider import Reply
from ui_harness import idle, make_app, press, screen, type_text, wait_for


async def test_resume_picker_lists_this_directorys_sessions_filters_and_resumes(
        tmp_path, fake_provider):
    fake_provider.script(Reply.text("apples are red"), Reply.text("bananas are yellow"),
                         Reply.text("cherries are small"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["sessions"])
    app.start()
    for prompt in ("tell me about apples", "tell me about bananas"):
        await type_text(app, prompt, enter=True)
        await idle(app)
        await type_text(app, "/clear", enter=True)  # the session stays saved; a new one starts
    await type_text(app, "tell me about cherries", enter=True)
    await idle(app)
    await type_text(app, "/resume", enter=True)
    rows = await wait_for(app, "Resume a session (2 in this directory)")
    assert "tell me about apples" in rows and "tell me about bananas" in rows
    assert "2 msgs" in rows and "just now" in rows and "unpriced" in rows  # age, size, cost
    assert "tell me about cherries  " not in rows.split("Resume a session")[1]  # not itself
    await type_text(app, "appl")  # typing narrows the list
    rows = screen(app)
    assert "filter> appl" in rows and "1 of 2" in rows
    assert "tell me about bananas" not in rows.split("Resume a session")[1]
    await press(app, "enter")
    rows = await wait_for(app, "apples are red")
    assert "cherries are small" not in rows and app.modal is None
    assert "resumed" in rows


async def test_agent_and_think_pickers_and_the_tool_count_follows_the_variant(
        tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["agents", "files", "bash"])
    app.start()
    status = screen(app).splitlines()[-1]
    assert status.startswith("m  default/medium")
    before = int(status.split("tools")[0].split()[-1])
    await type_text(app, "/agent", enter=True)
    rows = await wait_for(app, "Agent variant (now default)")
    assert "plan     read-only planning" in rows
    await press(app, "down", "down", "down")  # default, quick, deep, plan
    await press(app, "enter")
    status = (await wait_for(app, "m  plan/high")).splitlines()[-1]
    after = int(status.split("tools")[0].split()[-1])
    assert after < before  # the read-only variant offers fewer tools, and the bar says so
    await type_text(app, "/think", enter=True)
    await wait_for(app, "Thinking level (now high)")
    await press(app, "up", "enter")  # from high up to medium
    await wait_for(app, "m  plan/medium")
    await type_text(app, "/think", enter=True)
    await wait_for(app, "Thinking level (now medium)")
    await press(app, "esc")  # cancelled: nothing changes
    rows = screen(app)
    assert app.modal is None and rows.splitlines()[-1].startswith("m  plan/medium")


async def test_one_context_figure_in_the_turn_line_the_status_bar_and_cost(
        tmp_path, fake_provider):
    import re

    fake_provider.script(Reply.text("an answer " * 50))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["prune", "files"],
                   flags={"compact_threshold": 20_000})
    app.start()
    await type_text(app, "a question " * 40, enter=True)
    rows = await idle(app)
    turn = re.search(r"\(~([\d,]+) tokens in context\)", rows)
    assert turn, rows
    figure = int(turn.group(1).replace(",", ""))
    # the last request: system prompt and tool schemas (thousands of tokens) plus history
    assert figure > 1000
    status = rows.splitlines()[-1]
    assert f"{figure * 100 // 20_000}% ctx" in status
    await type_text(app, "/cost", enter=True)
    rows = await wait_for(app, "context: ~")
    assert f"context: ~{figure:,} tokens in the last request (system prompt, tools and " \
           "history; " in rows


async def test_without_the_sessions_plugin_the_ui_runs_unsaved_and_says_good_bye(
        tmp_path, fake_provider):
    from agent.ui.screen import farewell

    fake_provider.script(Reply.text("apples are red"))
    app = make_app(tmp_path, fake_provider.openai_url, without=["sessions"])
    app.start()
    await type_text(app, "tell me about apples", enter=True)
    await wait_for(app, "apples are red")
    await idle(app)
    assert app.session.recorder is None and "NOT SAVED" not in screen(app)
    await type_text(app, "/resume", enter=True)
    await wait_for(app, "unknown command /resume")  # the feature is gone as a whole
    assert farewell(app) == "Good bye."
    db = tmp_path / "home" / "state" / "agent.db"
    if db.exists():
        import sqlite3

        assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0
