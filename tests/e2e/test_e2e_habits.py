"""A Claude Code user's hands in a real terminal (pyte): ``!command``, shift-tab, ctrl-c and
``@file``, against the installed ``agent`` and the fake provider."""

from __future__ import annotations

import threading

import pytest
from fakeprovider import Reply
from pty_term import Term

pytestmark = pytest.mark.e2e  # a real terminal (docs/testing.md)

IDLE = "ask agent... (/ commands, @ files)"
SHIFT_TAB = "\x1b[Z"


@pytest.fixture
def term(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("approval_guard = 0\n")
    started = Term(["--provider", "openai", "--base-url", fake_provider.openai_url,
                    "--model", "m"], cwd=ws, home=home, env={"OPENAI_API_KEY": "x"})
    started.ws = ws  # type: ignore[attr-defined]
    yield started
    started.close()


def user_texts(request) -> str:
    out = []
    for message in request.body["messages"]:
        content = message.get("content")
        if message["role"] == "user" and isinstance(content, str):
            out.append(content)
    return "\n".join(out)


def test_the_habits_in_a_real_terminal(term, fake_provider):
    ws = term.ws
    (ws / "notes.txt").write_text("first line\nsecond line\n")
    held = threading.Event()
    fake_provider.script(
        Reply.text("saw it"),
        Reply.tool_call("write_file", {"path": "plan.txt", "content": "x"}, id="w1"),
        Reply.text("plan mode stopped me"),
        Reply.held(held, reply=Reply.text("too late")))
    term.wait_for(IDLE)

    # !command: run by the person, shown, and carried in the next request
    term.type("!echo from-the-shell-7 > shell.txt; cat shell.txt")
    term.wait_for("from-the-shell-7")
    term.wait_for(IDLE)
    assert (ws / "shell.txt").read_text() == "from-the-shell-7\n"
    # @file: its numbered content in the same request
    term.type("look at @notes.txt now")
    term.wait_for("saw it")
    first = fake_provider.requests[0]
    sent = user_texts(first)
    assert "<bash-input>echo from-the-shell-7 > shell.txt; cat shell.txt</bash-input>" in sent
    assert "from-the-shell-7" in sent.split("</bash-input>", 1)[1]
    assert "1: first line\n2: second line" in sent

    # shift-tab twice: plan mode, on screen and in the gate's decision
    term.wait_for(IDLE)
    term.send(SHIFT_TAB)
    term.wait_for("accept-edits on")
    term.send(SHIFT_TAB)
    screen = term.wait_for("plan mode (shift-tab)")
    assert "plan mode" in screen.splitlines()[-1]
    term.type("make a plan file")
    term.wait_for("plan mode stopped me")
    assert not (ws / "plan.txt").exists()
    told = [m for m in fake_provider.requests[2].body["messages"] if m["role"] == "tool"]
    assert "plan mode" in told[-1]["content"]

    # ctrl-c: clears the input; cancels a running turn; twice on an idle prompt quits
    term.wait_for(IDLE)
    term.type("never sent", enter=False)
    term.wait_for("> never sent")
    term.send("\x03")
    term.wait_for(IDLE)
    term.type("a slow one")
    term.wait_for("working")
    term.send("\x03")
    term.wait_for("interrupted")
    term.wait_for(IDLE)
    held.set()
    term.send("\x03")
    term.wait_for("press ctrl-c again to quit")
    term.send("\x03")
    assert term.wait_exit() == 0
    assert len(fake_provider.requests) == 4  # "never sent" was not
