"""After-turn work (``agent_after_turn``): the ``format`` plugin's formatter runs on the event
loop after the turn, so the loop keeps answering while it works; its result still lands, the
next turn waits for it, and ``agent -p`` waits for it before exiting.

The fake formatter blocks on a FIFO the test controls, so "still running" is a fact of the
test, not a matter of timing."""

from __future__ import annotations

import asyncio
import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clirun import agent_env
from fakeprovider import Reply

from agent import Effects, Tool, hookimpl
from agent.contract.messages import Message, TextPart, ToolCallPart
from agent.contract.providers import StepFinished, Usage
from agent.loop.session import Runtime, Session
from agent.testing import make_boot

# The formatter says it started, then waits until the test writes a line into .release.
GATED_RUFF = ('touch "$PWD/.started"\n'
              'read line < "$PWD/.release"\n'
              'echo "$PWD $* $line" >> "$PWD/.formatted"\n')


class Jot:
    """A write tool from a plugin the format plugin has never heard of."""

    @hookimpl
    def agent_register_tools(self, register, config):
        async def jot(args, ctx):
            ctx.resolve(args["path"]).write_text("x = 1\n")
            return "jotted"

        register(Tool("jot", "write a note", jot,
                      {"type": "object", "properties": {"path": {"type": "string"}}},
                      effects=lambda args: Effects(writes=(args["path"],))))


class Scripted:
    """A provider answering from a list, noting whether the formatter had finished when
    each request arrived."""

    label = "scripted"

    def __init__(self, workspace: Path, *replies: Message) -> None:
        self.workspace = workspace
        self.replies = list(replies)
        self.formatted_at_request: list[bool] = []

    async def stream(self, request):
        self.formatted_at_request.append((self.workspace / ".formatted").exists())
        yield StepFinished(self.replies.pop(0), Usage())


def jot_call(path: str) -> Message:
    return Message("assistant", [ToolCallPart("c1", "jot", {"path": path})])


DONE = Message("assistant", [TextPart("done")])


async def yes(request):
    return "yes"


@pytest.fixture
def gated(tmp_path, monkeypatch):
    """A workspace whose formatter (a fake ``ruff`` on PATH) waits on ``.release``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "pyproject.toml").write_text("[tool.ruff]\n")
    os.mkfifo(ws / ".release")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ruff").write_text("#!/bin/sh\n" + GATED_RUFF)
    (bindir / "ruff").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return ws


def try_release(ws: Path, line: str = "go") -> bool:
    """Write ``line`` to the formatter if it is reading .release now (False: no reader)."""
    try:
        fd = os.open(ws / ".release", os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return False
        raise
    with os.fdopen(fd, "w") as fifo:
        fifo.write(line + "\n")
    return True


async def until(condition, what: str, bound: int = 3000) -> None:
    """Poll ``condition`` while the loop runs other work (at most ``bound`` passes)."""
    for _ in range(bound):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def session_for(ws: Path, tmp_path: Path, provider: Scripted) -> Session:
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["format"],
                              extra=[("notes", Jot())])
    return Session(Runtime(config, hooks, hooks.tools(config), provider, approver=yes))


async def test_the_loop_answers_while_the_formatter_runs_and_its_result_lands(gated, tmp_path):
    provider = Scripted(gated, jot_call("a.py"), DONE)
    session = session_for(gated, tmp_path, provider)
    events = [event async for event in session.run("write a.py")]
    assert events[-1].type == "done"
    # The turn is over and this coroutine runs, while the formatter is still waiting for us.
    await until(lambda: (gated / ".started").exists(), "the formatter started")
    assert session.after_turn_pending == ["format"]
    assert not (gated / ".formatted").exists()
    progressed = []

    async def other_work() -> None:
        progressed.append("ran")

    await asyncio.wait_for(asyncio.ensure_future(other_work()), 30)
    assert progressed == ["ran"]
    await until(lambda: try_release(gated), "the formatter reads .release")
    assert await session.wait_after_turn() == []
    assert (gated / ".formatted").read_text() == f"{gated} format . go\n"
    assert session.after_turn_pending == []


async def test_the_next_turn_waits_for_the_formatter_before_asking_the_model(gated, tmp_path):
    provider = Scripted(gated, jot_call("a.py"), DONE, DONE)
    session = session_for(gated, tmp_path, provider)
    [event async for event in session.run("write a.py")]
    await until(lambda: (gated / ".started").exists(), "the formatter started")
    turn = session.run("and now?")
    first = await turn.__anext__()
    assert first.type == "notice" and "format" in first.text
    await until(lambda: try_release(gated), "the formatter reads .release")
    rest = [event async for event in turn]
    assert rest[-1].type == "done"
    # The second turn's request left only once the formatter had written its result.
    assert provider.formatted_at_request == [False, False, True]


async def test_work_still_running_after_the_bound_is_cancelled_and_its_process_stopped(
        gated, tmp_path):
    provider = Scripted(gated, jot_call("a.py"), DONE)
    session = session_for(gated, tmp_path, provider)
    [event async for event in session.run("write a.py")]
    await until(lambda: (gated / ".started").exists(), "the formatter started")
    assert await session.wait_after_turn(timeout=0.2) == ["format"]
    assert session.after_turn_pending == []
    assert not try_release(gated)  # nobody reads .release any more: the formatter is gone
    assert not (gated / ".formatted").exists()
    assert any("format: after-turn work still running" in p for p in session.hooks.problems)


async def test_a_failing_after_turn_hook_is_reported_and_the_session_goes_on(tmp_path):
    class Broken:
        @hookimpl
        def agent_after_turn(self, session, done):
            async def work():
                raise RuntimeError("disk on fire")
            return work()

    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", extra=[("broken", Broken())])
    provider = Scripted(ws, DONE, DONE)
    session = Session(Runtime(config, hooks, hooks.tools(config), provider, approver=yes))
    [event async for event in session.run("hi")]
    await session.wait_after_turn()
    assert any("broken" in p and "disk on fire" in p for p in hooks.problems)
    events = [event async for event in session.run("again")]
    assert events[-1].type == "done" and events[-1].reason == "end"


@pytest.mark.e2e
def test_headless_waits_for_the_formatter_before_exiting(gated, tmp_path, fake_provider):
    fake_provider.script(
        Reply.tool_call("write_file", {"path": "a.py", "content": "x=1\n"}, id="w1"),
        Reply.text("written"))
    env = agent_env(tmp_path / "home", OPENAI_API_KEY="x", PATH=os.environ["PATH"])
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", "-p", "write a.py", "--yolo", "--enable", "format",
         "--provider", "openai", "--base-url", fake_provider.openai_url, "--model", "m"],
        cwd=gated, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(6000):
            if (gated / ".started").exists() or proc.poll() is not None:
                break
            time.sleep(0.01)  # a bounded poll of the other process
        assert (gated / ".started").exists(), proc.communicate(timeout=30)
        assert proc.poll() is None  # the answer is printed, the run waits for the formatter
        for _ in range(3000):
            if try_release(gated):
                break
            assert proc.poll() is None, "agent exited while the formatter was still running"
            time.sleep(0.01)  # a bounded poll of the other process
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert out == "written\n"
    assert (gated / "a.py").read_text() == "x=1\n"
    assert (gated / ".formatted").read_text() == f"{gated} format . go\n"


async def test_a_subagents_after_turn_work_is_waited_for_by_the_main_session(tmp_path):
    release = asyncio.Event()

    class Notes:
        @hookimpl
        def agent_after_turn(self, session, done):
            async def work():
                await release.wait()
                (tmp_path / f"{session.origin}.done").write_text(done.reason)
            return work() if session.origin == "worker" else None

    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", extra=[("notes", Notes())])
    runtime = Runtime(config, hooks, hooks.tools(config), Scripted(ws, DONE), approver=yes)
    main = Session(runtime)
    worker = Session(runtime, parent=main, origin="worker")
    [event async for event in worker.run("sub task")]
    assert main.after_turn_pending == ["notes"]
    release.set()
    assert await main.wait_after_turn() == []
    assert (tmp_path / "worker.done").read_text() == "end"
