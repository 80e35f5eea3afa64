"""Tool faults inside a turn: a tool that raises, one that returns 50 MB, bash writing bytes
that are not UTF-8 or never ending, a file vanishing between read and edit.  The turn goes
on; the model is told what happened in the tool message of the next request (asserted on
the request the fake server received), and that request is valid."""

from __future__ import annotations

import os
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from fakeprovider import Reply
from faultkit import FORMATS, IDS, LONG, Turn, next_prompt_works, open_session
from waiting import LoopClock, until
from wirecheck import assert_valid_request

from agent import NO_EFFECTS, Tool, hookimpl
from agent.contract import events as ev
from agent.contract.tools import RESULT_CAP
from agent.testing import collect, make_boot, make_session

BIG = 50_000_000


class Faulty:
    """Tools that fail in the ways real ones do."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    @hookimpl
    def agent_register_tools(self, register, config):
        schema = {"type": "object", "properties": {}}

        async def explode(args, ctx):
            self.ran.append("explode")
            raise ValueError("the frobnicator is out of range")

        async def flood(args, ctx):
            self.ran.append("flood")
            return "x" * BIG

        async def fine(args, ctx):
            self.ran.append("fine")
            return "all good"

        def bad_effects(args):
            raise KeyError("target")

        register(Tool("explode", "Raises.", explode, schema, effects=lambda a: NO_EFFECTS,
                      read_only=True))
        register(Tool("flood", "Returns 50 MB.", flood, schema, effects=lambda a: NO_EFFECTS,
                      read_only=True))
        register(Tool("fine", "Works.", fine, schema, effects=lambda a: NO_EFFECTS,
                      read_only=True))
        register(Tool("confused", "Cannot say what it does.", fine, schema,
                      effects=bad_effects))


async def approve(request):
    return "yes"


def tool_messages(request) -> dict[str, str]:
    """call id -> what the model was told, from a recorded request of any format."""
    body = request.body
    if "input" in body:  # responses
        return {i["call_id"]: i["output"] for i in body["input"]
                if i["type"] == "function_call_output"}
    if request.path == "/v1/messages":
        return {b["tool_use_id"]: b["content"] for m in body["messages"] if m["role"] == "user"
                for b in m["content"] if b["type"] == "tool_result"}
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_raising_tool_fails_its_call_and_the_turn_goes_on(tmp_path, fake_provider, fmt):
    faulty = Faulty()
    fake_provider.script(
        Reply(tool_calls=[("explode", {}, "c1"), ("fine", {}, "c2"), ("confused", {}, "c3")]),
        Reply.text("I will try something else."))
    session = open_session(tmp_path, fake_provider, fmt, extra=[("faulty", faulty)],
                           approver=approve)
    events = await collect(session, "go")
    assert events[-1].reason == "end"
    assert faulty.ran == ["explode", "fine"]  # a call whose effects are unknown never ran
    told = tool_messages(fake_provider.requests[1])
    assert told["c1"] == "explode failed: ValueError: the frobnicator is out of range"
    assert told["c2"] == "all good"
    assert "could not work out what this call would do" in told["c3"]
    assert_valid_request(fake_provider.requests[1])
    await next_prompt_works(session, fake_provider)


async def test_fifty_megabytes_of_output_reach_the_model_capped(tmp_path, fake_provider):
    faulty = Faulty()
    fake_provider.script(Reply.text("ready"), Reply.tool_call("flood", {}, id="c1"),
                         Reply.text("that was a lot"))
    # Every installed plugin, so every agent_tool_result / agent_event hook sees the result.
    session = open_session(tmp_path, fake_provider, FORMATS[0], extra=[("faulty", faulty)],
                           builtins=["files", "bash", "format", "undo", "secrets", "protect",
                                     "guard", "prune", "sessions", "todos", "bell"])
    # A first turn before counting: the first request of a process imports the SDK on a
    # worker thread (tens of MB of modules), which tracemalloc would count in the peak.
    await collect(session, "are you there?")
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        events = await collect(session, "flood me")
        peak = tracemalloc.get_traced_memory()[1] - base
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert events[-1].reason == "end"
    told = tool_messages(fake_provider.requests[-1])["c1"]
    assert len(told) <= RESULT_CAP
    assert told.startswith("x" * 13_000) and told.endswith("x" * 13_000)  # head and tail
    saved = told.split(" are saved in ", 1)[1].split(": read_file that path", 1)[0]
    assert os.path.getsize(saved) == BIG  # the whole result is kept
    result = next(e for e in events if isinstance(e, ev.ToolResultEvent))
    assert result.output == told
    # The 50 MB string existed once (the tool built it); nothing made a second copy, and
    # nothing holds on to it after the call.
    assert peak < BIG + 10_000_000, peak
    assert held < 5_000_000, held


def live_output(events, call_id: str) -> str:
    """What the tool call ``call_id`` printed so far, as it streamed."""
    return "".join(e.chunk for e in events
                   if isinstance(e, ev.ToolOutputEvent) and e.id == call_id)


def ended(turn, call_id: str) -> bool:
    """Whether the tool call ``call_id`` of ``turn`` has its result (or error) yet."""
    return any(isinstance(e, ev.ToolResultEvent | ev.ToolErrorEvent) and e.id == call_id
               for e in turn.events)


@pytest.fixture
def shell_session(tmp_path, fake_provider):
    return open_session(tmp_path, fake_provider, FORMATS[0], builtins=["bash"],
                        approver=approve)


async def test_bash_bytes_that_are_not_utf8_arrive_as_replacement_characters(shell_session,
                                                                               fake_provider):
    fake_provider.script(
        Reply.tool_call("bash", {"command": r"printf 'caf\xe9 \xff\xfe ok\n'; "
                                             r"printf 'err \xc3\x28\n' >&2"}, id="c1"),
        Reply.text("odd bytes"))
    events = await collect(shell_session, "print junk")
    assert events[-1].reason == "end"
    told = tool_messages(fake_provider.requests[1])["c1"]
    assert told.startswith("exit: 0")
    assert "caf\ufffd \ufffd\ufffd ok" in told and "err \ufffd(" in told
    assert_valid_request(fake_provider.requests[1])
    await next_prompt_works(shell_session, fake_provider)


async def test_bash_that_never_ends_is_killed_at_its_timeout(shell_session, fake_provider):
    fake_provider.script(
        Reply.tool_call("bash", {"command": "echo started; sleep 60", "timeout": 1000},
                        id="c1"),
        Reply.tool_call("bash", {"command": "yes flood", "timeout": 1000}, id="c2"),
        Reply.text("it hung"))
    # Each timeout is kept on the event loop's clock: fired by moving that on (LoopClock.fire:
    # unless its real second is up already) once the command's output shows it runs, and for
    # the flood once it printed more than a result keeps.  Each command's wait began before
    # it could print, and after the request whose answer called it reached the server.
    clock = LoopClock()
    turn = Turn(shell_session, "hang")
    await until(lambda: "started" in live_output(turn.events, "c1") or ended(turn, "c1"),
                "the first command")
    clock.fire(fake_provider.requests[0].time, 1.0)
    await until(lambda: len(live_output(turn.events, "c2")) > 2 * RESULT_CAP
                or ended(turn, "c2"), "the flood")
    clock.fire(fake_provider.requests[1].time, 1.0)
    events = await turn.ended()
    assert events[-1].reason == "end"
    first = tool_messages(fake_provider.requests[1])["c1"]
    assert first.startswith("exit: 143 (killed by SIGTERM; timeout is 1000ms)"), first
    assert "started" in first
    flood = tool_messages(fake_provider.requests[2])["c2"]
    assert "timeout is 1000ms" in flood and "earlier chars not shown" in flood
    assert len(flood) <= RESULT_CAP
    await next_prompt_works(shell_session, fake_provider)


class VanishAfterRead:
    """Does to the file what another process might, right after read_file returns."""

    def __init__(self, how: str) -> None:
        self.how = how

    @hookimpl
    def agent_event(self, event, session):
        if isinstance(event, ev.ToolResultEvent) and event.name == "read_file":
            target = session.workspace / "notes.txt"
            target.unlink()
            if self.how == "directory":
                target.mkdir()


@pytest.mark.parametrize("how", ["deleted", "directory"])
async def test_a_file_vanishing_between_read_and_edit(tmp_path, fake_provider, how):
    fake_provider.script(
        Reply.tool_call("read_file", {"path": "notes.txt"}, id="r1"),
        Reply.tool_call("edit_file", {"path": "notes.txt", "oldString": "alpha",
                                      "newString": "beta"}, id="e1"),
        Reply.text("the file is gone"))
    session = open_session(tmp_path, fake_provider, FORMATS[2], builtins=["files"],
                           extra=[("vanish", VanishAfterRead(how))], approver=approve)
    (session.workspace / "notes.txt").write_text("alpha\n")
    events = await collect(session, "edit notes")
    assert events[-1].reason == "end"
    told = tool_messages(fake_provider.requests[2])
    assert told["r1"].startswith("1: alpha")
    expected = {"deleted": "No such file: notes.txt",
                "directory": "notes.txt is a directory, not a file."}[how]
    assert told["e1"] == expected
    assert not (session.workspace / "notes.txt").is_file()  # nothing was recreated
    errors = [e for e in events if isinstance(e, ev.ToolErrorEvent)]
    assert [e.id for e in errors] == ["e1"]
    assert_valid_request(fake_provider.requests[2])
    await next_prompt_works(session, fake_provider)


async def test_an_mcp_server_crashing_or_hanging_mid_call(tmp_path, fake_provider):
    mcp_state = pytest.importorskip("plugins_builtin.mcp").state
    ws = tmp_path / "ws"
    ws.mkdir()
    stub = str(Path(__file__).parents[1].joinpath("mcp_stub.py"))
    calls = tmp_path / "calls"  # the stub records each request it gets
    # timeout: what the hung call waits, on the clock of the MCP client's event loop, which
    # the test moves past it once the server has the call; the calls that answer (the stub
    # is raw JSON-RPC, answering in milliseconds) are far inside it
    servers = {"stub": {"command": sys.executable, "args": [stub, "--calls", str(calls)],
                        "timeout": LONG}}
    config, hooks = make_boot(ws, tmp_path / "home", builtins=["mcp", "openai"],
                              file_data={"mcp_servers": servers}, headless=True)
    try:
        mcp_state(config).manager.wait(20)
        clock = LoopClock(mcp_state(config).manager.loop)
        fake_provider.script(Reply.tool_call("mcp__stub__crash", {}, id="c1"),
                             Reply.tool_call("mcp__stub__hang", {}, id="c2"),
                             Reply.tool_call("mcp__stub__echo", {"text": "back"}, id="c3"),
                             Reply.text("the server recovered"))
        session = make_session(config, hooks, base_url=fake_provider.openai_url,
                               approver=approve)
        turn = Turn(session, "use the server")
        await until(lambda: calls.exists() and '"hang"' in calls.read_text(),
                    "the server to have the hanging call")
        clock.move_past(time.monotonic(), LONG)  # the call's wait began before
        events = await turn.ended()
        assert events[-1].reason == "end"
        told = tool_messages(fake_provider.requests[-1])
        assert told["c1"].startswith('mcp server "stub" crashed: the connection closed')
        assert told["c1"].endswith("it will be restarted on the next call")
        assert told["c2"] == (f'mcp server "stub" did not answer within {LONG} s; it will be '
                              "restarted on the next call")
        assert told["c3"] == "back"  # restarted, and the turn went on
        assert_valid_request(fake_provider.requests[-1])
    finally:
        hooks.unconfigure(config)


async def test_huge_bad_arguments_and_names_get_a_short_error(tmp_path, fake_provider):
    # The model's mistake is quoted back, but not a megabyte of it, and not on every request
    # from then on.
    fake_provider.script(
        Reply(tool_calls=[("peek", {"what": ["x" * 200_000]}, "c1"),
                          ("n" * 100_000, {}, "c2"),
                          ("peek", {"what": 7, "why": "y" * 100_000}, "c3")]),
        Reply.text("I will fix my call"))
    session = open_session(tmp_path, fake_provider, FORMATS[0])
    events = await collect(session, "go")
    assert events[-1].reason == "end"
    told = tool_messages(fake_provider.requests[1])
    assert told["c1"].startswith("Invalid arguments for peek:\n- what: ['xxx")
    assert "more chars]" in told["c1"] and len(told["c1"]) < 600
    assert told["c2"].startswith("Unknown tool: nnn") and "Tools available now: " in told["c2"]
    assert len(told["c2"]) < 300
    assert told["c3"].startswith("Invalid arguments for peek:\n- what: 7 is not of type")
    assert len(told["c3"]) < 600
