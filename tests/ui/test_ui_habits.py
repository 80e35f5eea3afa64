"""The habits a Claude Code or Codex user brings: ``!command``, shift-tab through the
permission modes, ctrl-c, ``@path``, ``/context`` and ``#note``, typed into the real root
widget against the fake provider."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from fakeprovider import Reply
from ui_harness import idle, make_app, press, screen, type_text, wait_for


def last_user_text(request) -> str:
    content = request.body["messages"][-1]["content"]
    return content if isinstance(content, str) else content[0]["text"]


def all_text(request) -> str:
    parts = []
    for message in request.body["messages"]:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [c.get("text", "") for c in content if isinstance(c, dict)]
    return "\n".join(parts)


def tool_results(request) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] == "tool"]


# ---- !command ----------------------------------------------------------------------------------


async def test_bang_command_runs_as_the_users_own_and_its_output_goes_in_the_next_request(
        tmp_path, fake_provider):
    fake_provider.script(Reply.text("I see the output"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["bash"])
    app.start()
    try:
        # A command the default policy would ask about (it writes): typing it was the yes.
        await type_text(app, "!echo made > made.txt; echo visible-output-42", enter=True)
        rows = await wait_for(app, "visible-output-42")
        await idle(app)
        assert (app.workspace / "made.txt").read_text() == "made\n"
        assert "Run `" not in rows  # no approval dialog
        assert not fake_provider.requests  # nothing went to the model yet
        await type_text(app, "what did it print?", enter=True)
        await wait_for(app, "I see the output")
        await idle(app)
        body = all_text(fake_provider.requests[0])
        assert "<bash-input>echo made > made.txt; echo visible-output-42</bash-input>" in body
        assert "visible-output-42" in body
        assert last_user_text(fake_provider.requests[0]) == "what did it print?"
    finally:
        app.hooks.unconfigure(app.config)


async def test_bang_command_the_policy_would_allow_still_runs_with_the_workspace_writable(
        tmp_path, fake_provider, monkeypatch):
    """Typing it was the approval: a command the judge takes for read-only (``git status``,
    here with a user-level git setting that runs a program) is not put in the read-only
    sandbox kept for calls nobody approved."""
    home = Path(tempfile.mkdtemp(prefix="agent-bang-home-", dir="/var/tmp"))
    monkeypatch.setenv("HOME", str(home))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["bash"])
    marker = app.workspace / "fsmonitor-ran"
    (home / ".gitconfig").write_text(f'[core]\n\tfsmonitor = "touch {marker}; false"\n')
    subprocess.run(["git", "init", "-q", str(app.workspace)], check=True)
    app.start()
    try:
        await type_text(app, "!git status; echo ran-it-7", enter=True)
        await wait_for(app, "ran-it-7")
        await idle(app)
        assert marker.exists()
    finally:
        app.hooks.unconfigure(app.config)
        shutil.rmtree(home, ignore_errors=True)


async def test_bang_command_is_still_refused_by_a_deny_rule_and_never_runs(
        tmp_path, fake_provider):
    fake_provider.script(Reply.text("ok"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["bash"],
                   file_data={"permission": {"bash": {"touch *": "deny"}}})
    app.start()
    try:
        await type_text(app, "!touch victim.txt", enter=True)
        await idle(app)
        assert not (app.workspace / "victim.txt").exists()
        await type_text(app, "and?", enter=True)
        await idle(app)
        body = all_text(fake_provider.requests[0])
        assert "<bash-refused>" in body and "touch victim.txt" in body
    finally:
        app.hooks.unconfigure(app.config)


# ---- shift-tab ---------------------------------------------------------------------------------


async def test_shift_tab_cycles_the_mode_on_screen_and_in_the_gates_decision(
        tmp_path, fake_provider):
    fake_provider.script(
        Reply.tool_call("write_file", {"path": "a.txt", "content": "A\n"}, id="w1"),
        Reply.text("wrote a"),
        Reply.tool_call("write_file", {"path": "b.txt", "content": "B\n"}, id="w2"),
        Reply.text("could not write b"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["files"])
    app.start()
    try:
        status = screen(app).splitlines()[-1]
        assert "accept-edits" not in status and "plan mode" not in status
        await press(app, "shift tab")
        assert "accept-edits on" in screen(app).splitlines()[-1]
        await type_text(app, "write a", enter=True)
        await wait_for(app, "wrote a")
        await idle(app)
        assert (app.workspace / "a.txt").read_text() == "A\n"  # no dialog: accept-edits
        await press(app, "shift tab")
        assert "plan mode" in screen(app).splitlines()[-1]
        await type_text(app, "write b", enter=True)
        await wait_for(app, "could not write b")
        await idle(app)
        assert not (app.workspace / "b.txt").exists()
        told = tool_results(fake_provider.requests[3])[-1]
        assert "plan mode" in told
        await press(app, "shift tab")  # back to default
        status = screen(app).splitlines()[-1]
        assert "plan mode" not in status and "accept-edits" not in status
        assert app.session.gate.flags is None
    finally:
        app.hooks.unconfigure(app.config)


async def test_plan_mode_refuses_the_users_own_bang_command_too(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["bash"])
    app.start()
    try:
        await press(app, "shift tab", "shift tab")
        await type_text(app, "!touch planned.txt", enter=True)
        rows = await idle(app)
        assert "plan mode" in rows
        assert not (app.workspace / "planned.txt").exists()
    finally:
        app.hooks.unconfigure(app.config)


# ---- ctrl-c ------------------------------------------------------------------------------------


async def test_ctrl_c_clears_the_input_then_quits_only_when_pressed_twice(
        tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    await type_text(app, "half a thought")
    await press(app, "ctrl c")
    assert app.editor.text == "" and not app.exit.is_set()
    await press(app, "ctrl c")
    assert not app.exit.is_set()
    assert "press ctrl-c again to quit" in screen(app)
    await press(app, "ctrl c")
    assert app.exit.is_set()


async def test_ctrl_c_after_a_while_asks_again(tmp_path, fake_provider):
    app = make_app(tmp_path, fake_provider.openai_url)
    now = [100.0]
    app.clock = lambda: now[0]
    app.start()
    await press(app, "ctrl c")
    now[0] += 10  # long after the first press: it is a first press again
    await press(app, "ctrl c")
    assert not app.exit.is_set()
    await press(app, "ctrl c")
    assert app.exit.is_set()


async def test_ctrl_c_cancels_a_running_turn_and_never_quits(tmp_path, fake_provider):
    answering = threading.Event()  # never set: the model is still answering at ctrl-c
    fake_provider.script(Reply.held(answering, reply=Reply.text("slow")), Reply.text("next"))
    app = make_app(tmp_path, fake_provider.openai_url)
    app.start()
    try:
        await type_text(app, "go", enter=True)
        await wait_for(app, lambda: app.busy and fake_provider.requests)
        await press(app, "ctrl c")
        rows = await idle(app)
        assert "interrupted" in rows and not app.exit.is_set()
        await press(app, "ctrl c")  # idle and empty now: the first of two
        assert not app.exit.is_set()
    finally:
        answering.set()


# ---- @path -------------------------------------------------------------------------------------


async def test_at_path_attaches_the_file_numbered_and_a_directory_listed(
        tmp_path, fake_provider):
    fake_provider.script(Reply.text("seen"), Reply.text("seen too"), Reply.text("long"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["files"])
    ws = app.workspace
    (ws / "src").mkdir()
    (ws / "src" / "main.py").write_text("print('one')\nprint('two')\n")
    (ws / "src" / "util.py").write_text("")
    (ws / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, 1501)))
    app.start()
    try:
        await type_text(app, "explain @src/main.py please", enter=True)
        await idle(app)
        sent = last_user_text(fake_provider.requests[0])
        assert sent.startswith("explain @src/main.py please\n\n")
        assert "1: print('one')\n2: print('two')" in sent
        await type_text(app, "what is in @src now", enter=True)
        await idle(app)
        sent = last_user_text(fake_provider.requests[1])
        assert "main.py" in sent and "util.py" in sent and "[directory src]" in sent
        await type_text(app, "skim @big.txt now", enter=True)
        await idle(app)
        sent = last_user_text(fake_provider.requests[2])
        assert "1: row 1\n" in sent and "1000: row 1000" in sent
        assert "1001: row 1001" not in sent
        assert "lines 1-1000 of 1501 shown" in sent  # the note says it was cut
    finally:
        app.hooks.unconfigure(app.config)


async def test_at_path_of_a_secret_or_outside_is_not_attached(tmp_path, fake_provider):
    fake_provider.script(Reply.text("ok"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["files"])
    (app.workspace / ".env").write_text("API_KEY=sk-hush-hush\n")
    (tmp_path / "outside.txt").write_text("beyond the workspace\n")
    app.start()
    try:
        await type_text(app, "see @.env and @../outside.txt and @nothing-here now", enter=True)
        rows = await idle(app)
        sent = last_user_text(fake_provider.requests[0])
        assert sent == "see @.env and @../outside.txt and @nothing-here now"
        assert "sk-hush-hush" not in fake_provider.requests[0].raw.decode()
        assert "@.env is not attached" in rows
        assert "@../outside.txt is not attached" in rows
    finally:
        app.hooks.unconfigure(app.config)


# ---- /context and #note ------------------------------------------------------------------------


async def test_context_shows_the_breakdown_with_tokens_and_a_bar(tmp_path, fake_provider):
    fake_provider.script(Reply.text("hello " * 200))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["files", "instructions"],
                   file_data={"compact_threshold": 100_000})
    (app.workspace / "AGENTS.md").write_text("Use tabs.\n" * 50)
    app.start()
    try:
        await type_text(app, "hi", enter=True)
        await idle(app)
        await type_text(app, "/context", enter=True)
        rows = await wait_for(app, "free")
        assert "of 100,000 tokens used" in rows
        for label in ("system prompt", "tool schemas", "instructions", "memory", "messages"):
            line = next(r for r in rows.splitlines() if f" {label} " in r)
            assert "tokens" in line and "%" in line
        instructions = next(r for r in rows.splitlines() if " instructions " in r)
        assert int(instructions.split()[2].replace(",", "")) >= 500 // 4
        assert "[S" in rows and "T" in rows and "....]" in rows
        assert "AGENTS.md" in rows  # the instruction files follow
    finally:
        app.hooks.unconfigure(app.config)


async def test_hash_note_saves_a_memory_and_sends_nothing(tmp_path, fake_provider):
    fake_provider.script(Reply.text("ok"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["memory"])
    app.start()
    try:
        await type_text(app, "#we deploy with make ship", enter=True)
        rows = await wait_for(app, "Remembered as fact")
        assert "we deploy with make ship" in rows
        assert not fake_provider.requests
        await type_text(app, "/notes", enter=True)
        await wait_for(app, "(fact) we deploy with make ship")
    finally:
        app.hooks.unconfigure(app.config)
