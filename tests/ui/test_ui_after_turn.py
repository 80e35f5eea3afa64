"""The screen stays live while the ``format`` plugin's formatter runs after a turn: keys
typed then are echoed, the next prompt waits for the formatter (and says so), and the
formatter's result lands.  The fake formatter blocks on a FIFO the test controls."""

from __future__ import annotations

import errno
import os

from fakeprovider import Reply
from ui_harness import idle, make_app, screen, type_text, wait_for

#: Seconds any one wait may take (a bound, not a speed claim: a loaded machine can take long
#: to import the SDK and answer).
BOUND = 60.0

GATED_RUFF = ('touch "$PWD/.started"\n'
              'read line < "$PWD/.release"\n'
              'echo "$PWD $* $line" >> "$PWD/.formatted"\n')


def try_release(ws) -> bool:
    """Write a line to the formatter if it is reading .release now (False: no reader)."""
    try:
        fd = os.open(ws / ".release", os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return False
        raise
    with os.fdopen(fd, "w") as fifo:
        fifo.write("go\n")
    return True


async def test_keys_echo_while_the_formatter_runs_and_the_next_prompt_waits_for_it(
        tmp_path, fake_provider, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ruff").write_text("#!/bin/sh\n" + GATED_RUFF)
    (bindir / "ruff").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    fake_provider.script(
        Reply.tool_call("write_file", {"path": "a.py", "content": "x=1\n"}, id="w1"),
        Reply.text("written a.py"),
        Reply.text("second answer"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["files", "format"],
                   flags={"yolo": True})
    ws = app.workspace
    (ws / "pyproject.toml").write_text("[tool.ruff]\n")
    os.mkfifo(ws / ".release")
    app.start()
    await type_text(app, "write a.py", enter=True)
    await wait_for(app, "written a.py", BOUND)
    await idle(app, BOUND)
    await wait_for(app, lambda: (ws / ".started").exists(), BOUND)
    # The formatter is blocked on us; the turn is over and the screen answers keys.
    assert app.session.after_turn_pending == ["format"]
    await wait_for(app, "formatting: ruff format .", BOUND)  # the plugin's live panel
    await type_text(app, "typed meanwhile")
    await wait_for(app, "typed meanwhile", BOUND)
    assert not (ws / ".formatted").exists()
    await type_text(app, " and sent", enter=True)
    await wait_for(app, "waiting for the last turn's after-turn work: format", BOUND)
    assert len(fake_provider.requests) == 2  # the second prompt is not sent yet
    await wait_for(app, lambda: try_release(ws), BOUND)
    await wait_for(app, "second answer", BOUND)
    assert (ws / ".formatted").read_text() == f"{ws} format . go\n"
    assert "typed meanwhile and sent" in fake_provider.requests[2].body["messages"][-1][
        "content"]
    assert "typed meanwhile and sent" in screen(app)


async def test_quitting_waits_for_the_formatter_and_says_so(tmp_path, fake_provider,
                                                            monkeypatch):
    import asyncio

    from agent.ui.screen import _shutdown

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ruff").write_text("#!/bin/sh\n" + GATED_RUFF)
    (bindir / "ruff").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    fake_provider.script(
        Reply.tool_call("write_file", {"path": "a.py", "content": "x=1\n"}, id="w1"),
        Reply.text("written a.py"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["files", "format"],
                   flags={"yolo": True})
    ws = app.workspace
    (ws / "pyproject.toml").write_text("[tool.ruff]\n")
    os.mkfifo(ws / ".release")
    app.start()
    await type_text(app, "write a.py", enter=True)
    await idle(app, BOUND)
    await wait_for(app, lambda: (ws / ".started").exists(), BOUND)
    shutdown = asyncio.ensure_future(_shutdown(app))
    await wait_for(app, "finishing after-turn work before exit: format", BOUND)
    assert not shutdown.done()
    await wait_for(app, lambda: try_release(ws), BOUND)
    await asyncio.wait_for(shutdown, BOUND)
    assert (ws / ".formatted").read_text() == f"{ws} format . go\n"


async def test_the_formatting_panel_goes_when_the_formatter_ends(tmp_path, fake_provider,
                                                                 monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ruff").write_text("#!/bin/sh\n" + GATED_RUFF)
    (bindir / "ruff").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    fake_provider.script(
        Reply.tool_call("write_file", {"path": "a.py", "content": "x=1\n"}, id="w1"),
        Reply.text("written a.py"))
    app = make_app(tmp_path, fake_provider.openai_url, builtins=["files", "format"],
                   flags={"yolo": True})
    ws = app.workspace
    (ws / "pyproject.toml").write_text("[tool.ruff]\n")
    os.mkfifo(ws / ".release")
    app.start()
    await type_text(app, "write a.py", enter=True)
    await idle(app, BOUND)
    await wait_for(app, "formatting: ruff format .", BOUND)
    await wait_for(app, lambda: try_release(ws), BOUND)
    # No key is pressed: the end of the work alone takes the panel away.
    await wait_for(app, lambda: "formatting:" not in screen(app), BOUND)
    assert (ws / ".formatted").read_text() == f"{ws} format . go\n"
