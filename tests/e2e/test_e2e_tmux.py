"""The acceptance run in a real terminal: tmux 100x30, the installed agent, the fake provider."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
import uuid

import pytest
from fakeprovider import Reply
from pty_term import SCRUBBED, agent_command

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")]

IDLE = "ask agent... (/ commands, @ files)"


class Tmux:
    def __init__(self, command: str, cwd) -> None:
        self.socket = f"agent-test-{uuid.uuid4().hex[:8]}"
        self._run("new-session", "-d", "-x", "100", "-y", "30", "-c", str(cwd), command)

    def _run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], check=True,
                              capture_output=True, text=True).stdout

    def screen(self) -> str:
        return self._run("capture-pane", "-p", "-t", "0")

    def history(self) -> str:
        return self._run("capture-pane", "-p", "-t", "0", "-S", "-200")

    def type(self, text: str, enter: bool = True) -> None:
        self._run("send-keys", "-t", "0", "-l", text)
        if enter:
            time.sleep(0.05)
            self._run("send-keys", "-t", "0", "Enter")

    def key(self, name: str) -> None:
        self._run("send-keys", "-t", "0", name)

    def wait_for(self, what: str, timeout: float = 15.0, history: bool = False) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.history() if history else self.screen()
            if what in text:
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what!r}; screen:\n{text}")
            time.sleep(0.05)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


def test_acceptance_in_tmux(tmp_path, fake_provider):
    import threading

    queued = threading.Event()  # the third answer goes on once the next prompt is queued
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("def greet():\n    return 'hi'\n")
    edit = {"path": "app.py", "oldString": "    return 'hi'\n",
            "newString": "    return 'hello'\n"}
    fake_provider.script(
        Reply.text("# Plan\n\nI will change **greet**:\n\n```python\ndef greet():\n"
                   "    return 'hello'\n```\n", pieces=12, delay=0.05),
        Reply.tool_call("edit_file", edit, id="e1"),
        # the role chunk and two pieces ("Done: greet now"), then nothing until ``queued``
        Reply.held(queued, after=3, reply=Reply.text("Done: greet now says hello.", pieces=4)),
        Reply.text("Second prompt answered."))
    (tmp_path / "home").mkdir()
    # no approval guard: the dialog is answered as soon as it shows
    (tmp_path / "home" / "config.toml").write_text("approval_guard = 0\n")
    env = " ".join(f"-u {name}" for name in SCRUBBED)
    agent = " ".join(shlex.quote(part) for part in agent_command())
    command = (f"env {env} AGENT_HOME={shlex.quote(str(tmp_path / 'home'))} "
               f"OPENAI_API_KEY=x TERM=xterm-256color {agent} --provider openai "
               f"--base-url {fake_provider.openai_url} --model m; echo EXIT=$?; exec sleep 60")
    term = Tmux(f"sh -c {shlex.quote(command)}", ws)
    try:
        screen = term.wait_for(IDLE)  # the first frame
        assert "openai/m" in screen
        term.type("plan the change")
        screen = term.wait_for("── python ─")
        term.wait_for("return 'hello'")
        term.wait_for(IDLE)
        term.type("do it")
        term.wait_for("Edit app.py (+1 \u22121)?")
        screen = term.wait_for("2 + ")
        assert "2 -     return 'hi'" in screen and "2 +     return 'hello'" in screen
        term.type("y", enter=False)
        term.wait_for("Done:")
        term.type("and a second prompt")  # typed while that turn still streams
        term.wait_for("queued: 1")
        queued.set()
        term.wait_for("Second prompt answered.")
        assert (ws / "app.py").read_text() == "def greet():\n    return 'hello'\n"
        bodies = [r.body["messages"][-1] for r in fake_provider.requests]
        assert bodies[-1]["content"] == "and a second prompt"
        term.type("/exit")
        out = term.wait_for("EXIT=0", history=True)
        assert "Resume it with:" in out and "agent -r " in out
    finally:
        term.close()


def _launch(tmp_path, fake_provider, *flags: str) -> Tmux:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    env = " ".join(f"-u {name}" for name in SCRUBBED)
    agent = " ".join(shlex.quote(part) for part in agent_command())
    command = (f"env {env} AGENT_HOME={shlex.quote(str(tmp_path / 'home'))} "
               f"OPENAI_API_KEY=x TERM=xterm-256color {agent} --provider openai "
               f"--base-url {fake_provider.openai_url} --model m {' '.join(flags)}; "
               "echo EXIT=$?; exec sleep 60")
    return Tmux(f"sh -c {shlex.quote(command)}", ws)


LONG = "\n\n".join(f"Answer paragraph {i} of the long reply." for i in range(40))


def test_the_conversation_is_in_the_terminal_history_after_exit(tmp_path, fake_provider):
    fake_provider.script(Reply.text("A first **short** answer.", pieces=3),
                         Reply.text(LONG + "\n\nThe very last answer line.", pieces=20))
    term = _launch(tmp_path, fake_provider)
    try:
        term.wait_for(IDLE)
        term.type("first")
        term.wait_for("A first short answer.")
        term.type("second")
        term.wait_for("The very last answer line.")
        term.wait_for(IDLE)
        term.type("/exit")
        out = term.wait_for("EXIT=0", history=True)
        history = term._run("capture-pane", "-p", "-t", "0", "-S", "-500")
        # the same blocks the screen showed, once each, then the farewell
        assert history.count("> first") == 1 and history.count("> second") == 1
        assert history.count("Answer paragraph 0 of") == 1
        assert history.index("A first short answer.") < history.index("Answer paragraph 39 of")
        assert history.index("The very last answer line.") < history.index("Resume it with:")
        assert "in context)" in history and "agent -r " in out
        styled = term._run("capture-pane", "-p", "-e", "-t", "0", "-S", "-500")
        assert "\x1b[" in styled.split("> second", 1)[0]  # it keeps its colours
    finally:
        term.close()


def test_inline_mode_leaves_finished_blocks_in_the_native_scrollback(tmp_path, fake_provider):
    fake_provider.script(Reply.text(LONG, pieces=30, delay=0.01),
                         Reply.text("After the long one.", pieces=2))
    term = _launch(tmp_path, fake_provider, "--inline")
    try:
        term.wait_for(IDLE)
        term.type("long answer please")
        term.wait_for("Answer paragraph 39 of")
        screen = term.wait_for(IDLE)
        assert "Answer paragraph 0 of" not in screen  # scrolled on, out of the screen...
        history = term._run("capture-pane", "-p", "-t", "0", "-S", "-500")
        assert history.count("Answer paragraph 0 of") == 1  # ...into the scrollback, once
        assert history.count("Answer paragraph 20 of") == 1
        lines = history.rstrip("\n").splitlines()
        assert lines[-1].startswith("m  default/medium")  # the status bar stays at the bottom
        term.type("again")
        term.wait_for("After the long one.")
        term.wait_for(IDLE)
        term.type("/exit")
        out = term.wait_for("EXIT=0", history=True)
        history = term._run("capture-pane", "-p", "-t", "0", "-S", "-500")
        assert history.count("After the long one.") == 1 and history.count("> again") == 1
        assert history.index("After the long one.") < history.index("Resume it with:")
        assert "agent -r " in out
    finally:
        term.close()


def test_page_up_then_ctrl_end_returns_to_the_bottom(tmp_path, fake_provider):
    fake_provider.script(Reply.text(LONG, pieces=10), Reply.text("Fresh output.", pieces=2))
    term = _launch(tmp_path, fake_provider)
    try:
        term.wait_for(IDLE)
        term.type("long")
        term.wait_for("Answer paragraph 39 of")
        term.wait_for(IDLE)
        term.key("PPage")
        term.key("PPage")
        deadline = time.monotonic() + 10
        while "Answer paragraph 39 of" in term.screen() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "Answer paragraph 39 of" not in term.screen()
        term.type("/nosuch")  # a command's output comes into view even when scrolled up
        term.wait_for("unknown command /nosuch")
        term.key("PPage")
        term.key("PPage")
        term.wait_for("Answer paragraph 10 of")
        term.key("C-End")
        screen = term.wait_for("unknown command /nosuch")
        assert "new output below" not in screen
    finally:
        term.close()


WIDE = " ".join(f"word{i}" for i in range(60))  # one paragraph of about 420 characters


def _wrapped_at(history: str, cols: int) -> bool:
    """Every word of WIDE is whole on one row and no row of the answer is wider than cols."""
    rows = [r.rstrip() for r in history.splitlines() if "word" in r]
    words = " ".join(rows).split()
    return (all(len(r) <= cols for r in rows)
            and all(f"word{i}" in words for i in range(60)))


def test_inline_mode_rewraps_what_it_printed_when_the_width_changes(tmp_path, fake_provider):
    fake_provider.script(Reply.text("First answer: " + WIDE, pieces=4),
                         Reply.text("Second answer.", pieces=2))
    term = _launch(tmp_path, fake_provider, "--inline")
    try:
        term.wait_for(IDLE)
        term.type("one")
        term.wait_for("word59")
        term.wait_for(IDLE)
        wide_rows = [r for r in term.history().splitlines() if "word" in r]
        assert max(len(r.rstrip()) for r in wide_rows) > 60  # drawn for 100 columns
        term._run("resize-window", "-t", "0", "-x", "60", "-y", "30")
        deadline = time.monotonic() + 15
        while not _wrapped_at(term.history(), 60) and time.monotonic() < deadline:
            time.sleep(0.05)
        history = term.history()
        assert _wrapped_at(history, 60), history
        # printed once, the live region under it at the new width
        assert history.count("First answer:") == 1 and history.count("> one") == 1
        lines = history.rstrip("\n").splitlines()
        assert lines[-1].startswith("m  default/medium") and IDLE in lines[-2]
        term._run("resize-window", "-t", "0", "-x", "140", "-y", "30")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            rows = [r.rstrip() for r in term.history().splitlines() if "word" in r]
            if rows and max(len(r) for r in rows) > 100:
                break
            time.sleep(0.05)
        history = term.history()
        assert _wrapped_at(history, 140) and history.count("First answer:") == 1, history
        assert max(len(r.rstrip()) for r in history.splitlines() if "word" in r) > 100
        term.type("two")
        term.wait_for("Second answer.")
        term.wait_for(IDLE)
        history = term.history()
        assert history.index("First answer:") < history.index("Second answer.")
    finally:
        term.close()
