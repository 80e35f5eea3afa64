"""The installed ``agent`` in a real pseudo-terminal against the fake provider."""

from __future__ import annotations

import os
import re
import time

import pytest
from fakeprovider import Reply
from pty_term import Term

pytestmark = pytest.mark.e2e  # a real terminal (docs/testing.md)

IDLE = "ask agent... (/ commands, @ files)"

#: No approval guard, for the tests that answer a dialog without being about the guard:
#: they answer as soon as they see it, where the default 0.4 s guard would send the key to
#: the prompt.  test_typing_ahead_into_an_approval_never_answers_it keeps the default.
NO_GUARD = "approval_guard = 0\n"


@pytest.fixture
def term_factory(tmp_path, fake_provider):
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    terms: list[Term] = []

    def start(*extra: str, config: str = "") -> Term:
        if config:
            home.mkdir(exist_ok=True)
            (home / "config.toml").write_text(config)
        term = Term(["--provider", "openai", "--base-url", fake_provider.openai_url,
                     "--model", "m", *extra], cwd=ws, home=home, env={"OPENAI_API_KEY": "x"})
        terms.append(term)
        return term

    yield start, ws
    for term in terms:
        term.close()


def test_startup_and_exit_prints_the_farewell(term_factory):
    start, _ = term_factory
    term = start()
    screen = term.wait_for(IDLE)
    assert "openai/m" in screen.splitlines()[1]
    assert screen.splitlines()[-1].startswith("m  default/medium")
    term.send("\x13")  # ctrl-s: freed from the tty, it must not freeze the output
    term.type("still typing", enter=False)
    term.wait_for("> still typing")
    term.send("\x15")  # ctrl-u clears the prompt
    term.send("\x1b[200~pasted one\rpasted two\x1b[201~")  # bracketed paste: no submit
    screen = term.wait_for("pasted two")
    assert "> pasted one" in screen and "working" not in screen
    term.send("\x15\x08\x15")  # clear both lines (ctrl-u, backspace, ctrl-u)
    term.type("/exit")
    assert term.wait_exit() == 0
    assert "Nothing to save from this session" in term.output()


def test_streamed_answer_tool_call_approval_and_resume_hint(term_factory, fake_provider):
    start, ws = term_factory
    (ws / "a.txt").write_text("alpha\nbeta\n")
    edit = {"path": "a.txt", "oldString": "beta\n", "newString": "BETA\n"}
    fake_provider.script(
        Reply.text("Let me look at **a.txt**:\n\n```python\nx = 1\n```", pieces=10),
        Reply.tool_call("edit_file", edit, id="e1"),
        Reply.text("Edited the file."))
    term = start(config=NO_GUARD)
    term.wait_for(IDLE)
    term.type("show me")
    screen = term.wait_for("── python ─")
    assert "Let me look at a.txt:" in screen and "x = 1" in screen
    term.wait_for(IDLE)
    term.type("edit it")
    term.wait_for("Edit a.txt (+1 \u22121)?")
    screen = term.wait_for("2 + BETA")
    assert "2 - beta" in screen
    term.send("y")
    term.wait_for("Edited the file.")
    assert (ws / "a.txt").read_text() == "alpha\nBETA\n"
    term.wait_for(IDLE)
    term.type("/exit")
    assert term.wait_exit() == 0
    out = term.output()
    assert "Resume it with:" in out and "agent -c" in out and "agent -r " in out


def test_prompt_typed_mid_turn_is_queued_then_esc_clears(term_factory, fake_provider):
    import threading

    start, _ = term_factory
    queued = threading.Event()  # the first answer goes on once the second prompt is queued
    fake_provider.script(Reply.held(queued, reply=Reply.text("first answer", pieces=4)),
                         Reply.text("second answer"),
                         Reply.stall(10.0, after=3, reply=Reply.text("stalling now ok", pieces=4)))
    term = start()
    term.wait_for(IDLE)
    term.type("one")
    term.wait_for("working")
    term.type("two")
    term.wait_for("queued: 1")
    queued.set()
    term.wait_for("second answer")
    term.wait_for(IDLE)
    term.type("three")
    term.wait_for("stalling")
    term.type("four")
    term.wait_for("queued: 1")
    term.send("\x1b")
    screen = term.wait_for("interrupted")
    term.wait_for(IDLE)
    assert "queued" not in term.text()
    assert [r.body["messages"][-1]["content"] for r in fake_provider.requests] == [
        "one", "two", "three"]
    del screen


def _sleeping(token: str) -> list[int]:
    """Live ``sleep TOKEN`` processes, seen from the host (any PID namespace)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{name}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if len(argv) > 1 and argv[0].endswith(b"sleep") and argv[1] == token.encode() \
                and state != "Z":
            found.append(int(name))
    return found


def test_ctrl_c_kills_the_running_command_and_keeps_the_turn(term_factory, fake_provider):
    start, ws = term_factory
    token = f"30.{os.getpid() % 100000}2"  # found by its argument: $$ is the namespace's pid
    command = (f"echo started > pid.txt; echo printed before ctrl-c; sleep {token}; "
               "echo done > after.txt")
    fake_provider.script(Reply.tool_call("bash", {"command": command}, id="b1"),
                         Reply.text("it was interrupted"))
    term = start(config=NO_GUARD)
    term.wait_for(IDLE)
    term.type("run it")
    term.wait_for("Run `echo started > pid.txt")
    term.send("y")
    pid_file = ws / "pid.txt"
    deadline = time.monotonic() + 10
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline, term.text()
        time.sleep(0.05)
    term.send("\x03")
    screen = term.wait_for("it was interrupted")
    assert "interrupted: echo started > pid.txt" in screen
    assert "| printed before ctrl-c" in screen  # what it printed stays on screen
    assert not _sleeping(token)
    assert not (ws / "after.txt").exists()
    term.wait_for(IDLE)
    term.send("\x03")  # nothing runs now: ctrl-c twice quits
    term.wait_for("press ctrl-c again to quit")
    term.send("\x03")
    assert term.wait_exit() == 0
    assert "Resume it with:" in term.output()


def test_space_rejects_a_hunk_and_the_rest_is_applied(term_factory, fake_provider):
    start, ws = term_factory
    old = "".join(f"line {i}\n" for i in range(1, 21))
    (ws / "b.txt").write_text(old)
    new = old.replace("line 2\n", "LINE 2\n").replace("line 18\n", "LINE 18\n")
    fake_provider.script(
        Reply.tool_call("edit_file", {"path": "b.txt", "oldString": old, "newString": new},
                        id="e1"),
        Reply.text("Applied what you kept."))
    term = start(config=NO_GUARD)
    term.wait_for(IDLE)
    term.type("edit b")
    term.wait_for("hunk 1/2 accepted")
    term.send("\x1b[B")  # down: the second hunk
    term.wait_for("hunk 2/2 accepted")
    term.send(" ")
    term.wait_for("hunk 2/2 rejected")
    term.send("y")
    term.wait_for("Applied what you kept.")
    text = (ws / "b.txt").read_text()
    assert "LINE 2\n" in text and "line 18\n" in text and "LINE 18" not in text
    term.type("/exit")
    assert term.wait_exit() == 0
    # What is left in the scrollback (after the alternate screen closed): the applied diff
    # printed in full, never behind a "ctrl o to expand" no key can answer there.
    printed = re.sub(r"\x1b\[[0-9;]*m", "", term.output().rsplit("\x1b[?1049l", 1)[1])
    assert "2 + LINE 2" in printed and "to expand" not in printed


def test_sigterm_leaves_cleanly_with_the_farewell(term_factory, fake_provider):
    import signal

    start, _ = term_factory
    fake_provider.script(Reply.text("answer one"))
    term = start()
    term.wait_for(IDLE)
    term.type("hello")
    term.wait_for("answer one")
    term.proc.kill(signal.SIGTERM)
    assert term.wait_exit() == 143  # 128 + SIGTERM, as a shell and a headless run report it
    out = term.output()
    assert "Resume it with:" in out
    assert out.rstrip().endswith("this session by id")


#: Answers of every shape, each over 9,000 characters, and the line that ends it on screen.
SHAPES = {
    "list": ("".join(f"- item {i}: check `mod_{i}.py`\n" for i in range(2000)),
             "- item 1999: check"),
    "code": ("```python\n" + "".join(f"x_{i} = {i}  # line {i}\n" for i in range(3000))
             + "```\n", "x_2999 = 2999  # line 2999"),
    "table": ("| row | value |\n|---|---|\n"
              + "".join(f"| row {i} | {i * 7} |\n" for i in range(500)), "row 499 │ 3493"),
    "paragraph": (" ".join(f"Sentence {i} has **bold** and `code`." for i in range(3300)),
                  "Sentence 3299 has"),
}

#: How long the fake provider takes to send each answer (in 60-character pieces, evenly
#: spaced): far longer than a typed key takes to show, so the key shows mid-stream.  A
#: longer trickle only makes the agent draw more frames of the same answer (a 100 KB
#: paragraph at 2 ms a piece took 9-18 s and 1.3-2.7 MB of terminal output).
STREAM_SECONDS = 1.0


def test_answers_of_every_shape_stream_while_typed_keys_show(term_factory, fake_provider):
    """A 2,000-item list, a 3,000-line code block, a 500-row table and a 100 KB paragraph
    stream while the user types: each typed key shows while the answer is still streaming
    (how fast is measured by bench/ui_bench.py), and the answer's end is drawn.  One
    terminal for all: a terminal per shape would import the SDK in each (2-3 s)."""
    fake_provider.script(*[Reply.text(text, pieces=len(text) // 60,
                                      delay=STREAM_SECONDS / (len(text) // 60))
                           for text, _ in SHAPES.values()])
    start, _ = term_factory
    term = start()
    term.wait_for(IDLE)
    for name, (text, end) in SHAPES.items():
        assert len(text) > 9_000
        term.type(f"shape {name}")
        term.wait_for("working...")
        term.send("zq")
        screen = term.wait_for("> zq")
        assert "working..." in screen, f"{name}: the key showed only after the answer ended"
        term.send("\x15")  # ctrl-u
        screen = term.wait_for(IDLE, timeout=120)
        screen = term.wait_for(end, timeout=10)
        assert "error" not in screen, name
    term.type("/exit")
    assert term.wait_exit(timeout=30) == 0


def test_typing_ahead_into_an_approval_never_answers_it(term_factory, fake_provider):
    """Keys typed while a turn runs into an approval (y, a and enter among them) stay typed
    text, whatever the pauses between them (0.5 to 3 s): the dialog stays open, nothing is
    written, the text is kept in the prompt; only the switch key (ctrl t) hands the dialog
    the keys."""
    fake_provider.script(
        Reply("Let me write the file now, one moment please.", pieces=12, delay=0.06,
              tool_calls=[("write_file", {"path": "new.txt", "content": "hello\n"}, "w1")]),
        Reply.text("Not written, as you said."))
    start, ws = term_factory
    term = start()
    term.wait_for(IDLE)
    term.type("write it")
    term.wait_for("working...")
    typed = "yay a yes always "
    for ch in typed * 2:  # about 2 s of typing, across the dialog's appearance
        term.send(ch)
        time.sleep(0.06)
    screen = term.wait_for("Write new.txt (1 line)?")
    assert "> " + (typed * 2).strip() in screen  # all of it in the prompt
    assert "ctrl t to answer this dialog" in screen
    prompt = typed * 2
    for pause, keys in ((0.5, "y"), (1.2, " a"), (3.0, "yes")):
        time.sleep(pause)  # a pause, then typing goes on: still the prompt's
        term.send(keys)
        prompt += keys
        screen = term.wait_for("> " + prompt)
        assert "Write new.txt (1 line)?" in screen  # still open: nothing answered it
    assert not (ws / "new.txt").exists()
    term.send("\x14")  # ctrl t: the dialog takes the keys
    term.send("n")
    term.wait_for("Not written, as you said.")
    assert not (ws / "new.txt").exists()
    assert "> " + prompt in term.wait_for("> yay")
    term.send("\x15")
    term.type("/exit")
    assert term.wait_exit(timeout=30) == 0


def test_onboarding_a_keyless_custom_endpoint(tmp_path, fake_provider):
    """No provider yet: the setup opens; a custom endpoint's URL is checked as typed, an
    empty key is accepted, and once a model is chosen header and status bar say so."""
    from plugins_builtin import anthropic as provider_anthropic
    from plugins_builtin import openai as provider_openai
    from plugins_builtin.setup.presets import offered

    presets = offered({"openai": provider_openai.SPEC, "anthropic": provider_anthropic.SPEC})

    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    term = Term([], cwd=ws, home=home)
    try:
        term.wait_for("Choose a provider")
        assert "no provider configured" in term.text()
        custom = next(i for i, p in enumerate(presets) if p.id == "custom-openai")
        term.send("\x1b[B" * custom)
        term.send("\r")
        term.wait_for("endpoint URL")
        term.send("not a url")
        term.wait_for("x a URL has no spaces")
        term.send("\x7f" * len("not a url"))
        term.send(fake_provider.openai_url)
        term.wait_for(fake_provider.openai_url)  # typed, and no longer "not a url"
        term.send("\r")
        term.wait_for("empty if the endpoint needs no key")
        term.send("\r")  # no key
        term.wait_for("Choose a model (2 available)")
        term.send("\r")
        screen = term.wait_for("configured with fake-model")
        assert "setup cancelled" not in screen and "no provider configured" not in screen
        assert "openai/fake-model" in screen
        assert screen.splitlines()[-1].startswith("fake-model  default/")
        fake_provider.script(Reply.text("a keyless answer"))
        term.type("hello")
        term.wait_for("a keyless answer")
        term.type("/exit")
        assert term.wait_exit(timeout=30) == 0
    finally:
        term.close()


def test_a_misspelt_config_key_is_named_on_the_start_screen(term_factory):
    start, _ = term_factory
    term = start(config="sandbox_netwrk = true\n")
    screen = term.wait_for(IDLE)
    assert 'unknown config key "sandbox_netwrk" (did you mean "sandbox_network"?)' in \
        " ".join(screen.split())
    term.type("/exit")
    assert term.wait_exit() == 0


def _with_stderr_to(path) -> list[str]:
    """The agent command with its stderr sent to ``path`` (the pty keeps stdin and stdout)."""
    from pty_term import agent_command

    return ["bash", "-c", f'exec "$@" 2>"{path}"', "bash", *agent_command()]


def test_sighup_leaves_with_129(term_factory):
    import signal

    start, _ = term_factory
    term = start()
    term.wait_for(IDLE)
    term.proc.kill(signal.SIGHUP)
    assert term.wait_exit() == 129
    assert "Nothing to save from this session" in term.output()


def test_a_vanished_terminal_leaves_no_traceback(tmp_path, fake_provider):
    import ptyprocess

    ws, home, err = tmp_path / "ws", tmp_path / "home", tmp_path / "stderr.txt"
    ws.mkdir()
    fake_provider.script(Reply.text("hello there"))
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "AGENT_PROVIDER")}
    env.update(AGENT_HOME=str(home), TERM="xterm-256color", OPENAI_API_KEY="x")
    proc = ptyprocess.PtyProcess.spawn(
        _with_stderr_to(err) + ["--provider", "openai", "--base-url", fake_provider.openai_url,
                                "--model", "m"], cwd=str(ws), env=env, dimensions=(30, 100))
    try:
        # Read on this thread only: a read blocked on another thread would keep the terminal
        # open after the close below.
        seen, deadline = b"", time.monotonic() + 30
        while b"ask agent" not in seen:
            assert time.monotonic() < deadline, seen[-2000:]
            seen += proc.read(65536)
        proc.write(b"say hello")
        time.sleep(0.05)
        proc.write(b"\r")
        while b"hello there" not in seen:
            assert time.monotonic() < deadline, seen[-2000:]
            seen += proc.read(65536)
        os.close(proc.fd)  # the window closes: the kernel hangs up the terminal
        deadline = time.monotonic() + 20
        while proc.isalive():
            assert time.monotonic() < deadline, "agent did not exit after its terminal went"
            time.sleep(0.05)
        assert proc.exitstatus == 129, (proc.exitstatus, proc.signalstatus)
        text = err.read_text()
        assert "Traceback" not in text and "Exception ignored" not in text, text
    finally:
        if proc.isalive():
            proc.kill(9)
