"""The prompt: menus, the @ picker, history, paste and line editing."""

from __future__ import annotations

from fakeprovider import Reply
from ui_harness import idle, make_app, press, screen, type_text, wait_for

from agent.ui.screen import input_filter


async def test_slash_menu_narrows_completes_and_runs(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "/")
    rows = screen(app)
    assert "> /cost" in rows or "/cost" in rows
    await type_text(app, "mo")
    rows = screen(app)
    assert "> /model <id>" in rows and "/models" in rows and "/cost" not in rows
    await press(app, "tab")
    assert app.editor.text == "/model "  # takes an argument: a trailing space
    assert not app.completion.open
    app.editor.set("")
    await type_text(app, "/hel")
    await press(app, "enter")
    assert app.info_panel is not None and "type / for the menu" in screen(app)


async def test_help_lists_every_registered_command(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["sessions"])
    app.size = (100, 80)
    app.start()
    await type_text(app, "/help", enter=True)
    rows = screen(app)
    for command in app.commands.sorted():
        assert f"/{command.name}" in rows


async def test_esc_dismisses_the_menu_until_the_text_changes(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "/c")
    assert app.completion.open
    await press(app, "esc")
    assert not app.completion.open
    await type_text(app, "o")
    assert app.completion.open


async def test_unknown_command_says_so(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "/frobnicate now", enter=True)
    assert "error: unknown command /frobnicate - try /help" in screen(app)


async def test_double_slash_sends_a_prompt_starting_with_a_slash(tmp_path, fake_provider):
    fake_provider.script(Reply.text("that path exists"))
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "//etc/hosts is odd", enter=True)
    await wait_for(app, "that path exists")
    assert fake_provider.requests[0].body["messages"][-1]["content"] == "/etc/hosts is odd"


async def test_at_picker_ranks_prefix_first_ignores_and_inserts(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    ws = app.workspace
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text("")
    (ws / "domain.txt").write_text("")
    (ws / "main_notes.md").write_text("")
    (ws / "build").mkdir()
    (ws / "build" / "main.o").write_text("")
    (ws / ".gitignore").write_text("build/\n")
    app.start()
    await type_text(app, "look at @mai")
    await wait_for(app, lambda: app.completion.open and app.completion.list.items)
    shown = [item.value for item in app.completion.list.items]
    assert shown[:2] == ["src/main.py", "main_notes.md"] or shown[:2] == ["main_notes.md",
                                                                          "src/main.py"]
    assert "domain.txt" in shown and shown.index("domain.txt") == 2  # substring after prefix
    assert not any(p.startswith("build") for p in shown)
    await press(app, "tab")
    assert app.editor.text.startswith("look at ") and app.editor.text.endswith(" ")
    assert app.editor.text.split()[-1] in ("src/main.py", "main_notes.md")
    app.editor.set("")
    await type_text(app, "@sr")
    await wait_for(app, lambda: app.completion.open and app.completion.list.items)
    assert app.completion.list.items[0].value == "src/"  # directories too


async def test_at_inside_a_word_opens_nothing(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "mail me@example")
    assert not app.completion.open


async def test_history_recall_restores_the_draft_and_persists(tmp_path, fake_provider):
    fake_provider.script(Reply.text("a1"), Reply.text("a2"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["sessions"])
    app.start()
    await type_text(app, "first prompt", enter=True)
    await idle(app)
    await type_text(app, "second prompt", enter=True)
    await idle(app)
    await type_text(app, "draft")
    await press(app, "up")
    assert app.editor.text == "second prompt"
    await press(app, "up")
    assert app.editor.text == "first prompt"
    await press(app, "down", "down")
    assert app.editor.text == "draft"
    again = make_app(tmp_path, fake_provider.openai_url, builtins=["sessions"])
    again.start()
    await press(again, "up")
    assert again.editor.text == "second prompt"


async def test_bracketed_paste_inserts_lines_without_submitting(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await press(app, "begin paste", "l", "i", "n", "e", "1", "enter", "l", "2", "enter",
                "end paste")
    assert app.editor.text == "line1\nl2\n"
    assert not app.busy and fake_provider.requests == []
    assert "> line1" in screen(app)


def test_a_burst_with_enter_inside_is_treated_as_a_paste():
    keys = list("hello") + ["enter"] + list("world")
    assert input_filter(keys, []) == ["begin paste", *keys, "end paste"]
    typed = list("hello") + ["enter"]
    assert input_filter(typed, []) == typed


async def test_trailing_backslash_continues_the_prompt(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "one \\", enter=True)
    assert app.editor.text == "one \n" and not app.busy


async def test_line_editing_keys(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "alpha beta gamma")
    await press(app, "ctrl a")
    assert app.editor.edit_pos == 0
    await press(app, "meta f")
    await press(app, "ctrl k")
    assert app.editor.text == "alpha"
    await press(app, "ctrl e")
    await type_text(app, " delta")
    await press(app, "ctrl w")
    assert app.editor.text == "alpha "
    await press(app, "ctrl a", "ctrl d")
    assert app.editor.text == "lpha "
    await press(app, "end", "ctrl u")
    assert app.editor.text == ""


# ---- scrolling ---------------------------------------------------------------------------------

def _tail(app) -> str:
    return [line for line in screen(app).splitlines() if "paragraph" in line][-1].strip()


def _head(app) -> str:
    return [line for line in screen(app).splitlines() if "paragraph" in line][0].strip()


async def test_new_output_below_marker_and_ctrl_end_jump_back(tmp_path):
    app = make_app(tmp_path, "http://127.0.0.1:9/v1")
    app.start()
    for i in range(60):
        app.add("markdown", f"Answer paragraph {i}")
    assert _tail(app) == "Answer paragraph 59"
    await press(app, "page up", "page up")
    scrolled = _head(app)
    assert _tail(app) != "Answer paragraph 59" and "new output below" not in screen(app)
    app.add("markdown", "Answer paragraph 60")  # arrives while the user reads above
    rows = screen(app)
    assert "v new output below - ctrl end to jump to it" in rows
    assert _head(app) == scrolled  # the view did not move under the reader
    await press(app, "ctrl end")
    assert _tail(app) == "Answer paragraph 60" and "new output below" not in screen(app)
    await press(app, "ctrl home")
    assert "Answer paragraph 0" in screen(app)
    await press(app, "meta >")
    assert _tail(app) == "Answer paragraph 60"


async def test_a_command_run_while_scrolled_up_is_brought_into_view(tmp_path):
    app = make_app(tmp_path, "http://127.0.0.1:9/v1")
    app.start()
    for i in range(60):
        app.add("markdown", f"Answer paragraph {i}")
    screen(app)
    await press(app, "page up", "page up", "page up")
    await type_text(app, "/nosuchcommand", enter=True)
    rows = screen(app)
    assert "unknown command /nosuchcommand" in rows and "new output below" not in rows


def test_a_burst_of_arrows_is_the_wheel_and_a_single_arrow_is_a_key():
    from agent.ui.screen import input_filter

    assert input_filter(["up", "up", "up"], []) == ["wheel up"] * 3
    assert input_filter(["down", "down"], []) == ["wheel down"] * 2
    assert input_filter(["up"], []) == ["up"]
    assert input_filter(["up", "down"], []) == ["up", "down"]


async def test_the_wheel_scrolls_the_transcript_and_the_arrow_keeps_the_history(tmp_path):
    app = make_app(tmp_path, "http://127.0.0.1:9/v1")
    app.start()
    app.editor.history.add("an earlier prompt")
    for i in range(60):
        app.add("markdown", f"Answer paragraph {i}")
    assert _tail(app) == "Answer paragraph 59"
    await press(app, "wheel up", "wheel up", "wheel up")
    assert _tail(app) != "Answer paragraph 59"
    assert "an earlier prompt" not in screen(app)  # the prompt is untouched
    await press(app, "wheel down", "wheel down", "wheel down")
    assert _tail(app) == "Answer paragraph 59"
    await press(app, "up")
    assert "> an earlier prompt" in screen(app)
