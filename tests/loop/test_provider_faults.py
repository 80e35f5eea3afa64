"""Provider faults at the session level: a connection dropped mid-answer or mid-tool-call,
malformed events, an error event inside the stream, a stall past the timeout, text no
encoder accepts, a provider plugin that raises.  Each turn ends in one clear error; what the
user saw is kept as the assistant's message; every tool call has its result; and the next
prompt works, which is checked on the request the fake server received next.  All three wire
formats, through the real SDKs."""

from __future__ import annotations

import json
import time

import pytest
from fakeprovider import Reply
from faultkit import (
    FORMATS,
    IDS,
    LONG,
    Turn,
    error_of,
    mid_text,
    next_prompt_works,
    open_session,
    shown_text,
)
from waiting import LoopClock, until
from wirecheck import assert_human, assert_valid_request

from agent.contract import events as ev
from agent.contract.messages import Message, TextPart
from agent.contract.providers import ProviderRequest
from agent.loop.session import Runtime, Session
from agent.testing import collect, make_boot


def texts(request) -> str:
    return request.raw.decode()


# ---- broken streams ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_connection_dropped_mid_answer_keeps_the_partial_answer(tmp_path, fake_provider,
                                                                      fmt):
    fake_provider.script(Reply.drop_after(mid_text(fmt), Reply("The answer is forty", pieces=4)))
    session = open_session(tmp_path, fake_provider, fmt, retries=2)
    events = await collect(session, "hello")
    error = error_of(events)
    assert_human(error.error)
    assert "connection" in error.error and "could not connect" not in error.error
    shown = shown_text(events)
    assert shown  # some of the answer arrived before the cut
    assert [m.role for m in session.messages] == ["user", "assistant"]
    assert session.messages[-1].text == shown  # kept exactly as the user saw it
    assert len(fake_provider.requests) == 1  # a stream that started is not replayed
    roles = await next_prompt_works(session, fake_provider)
    assert roles == ["user", "assistant", "user"]
    assert shown in texts(fake_provider.requests[-1])


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_connection_dropped_before_any_text_says_the_stream_broke(tmp_path,
                                                                        fake_provider, fmt):
    fake_provider.script(Reply.drop_after(1))
    session = open_session(tmp_path, fake_provider, fmt)
    error = error_of(await collect(session, "hello"))
    assert_human(error.error)
    # The server answered: the connection did not fail to open, the stream broke.
    assert "could not connect" not in error.error and "connection" in error.error
    assert [m.role for m in session.messages] == ["user"]
    await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_stream_cut_after_a_tool_step_leaves_every_call_answered(tmp_path,
                                                                       fake_provider, fmt):
    fake_provider.script(
        Reply(text="Looking.", tool_calls=[("peek", {"what": "a"}, "call_a"),
                                           ("peek", {"what": "b"}, "call_b")]),
        Reply.drop_after(mid_text(fmt), Reply("So far a and", pieces=3)))
    session = open_session(tmp_path, fake_provider, fmt)
    events = await collect(session, "look at a and b")
    error_of(events)
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert [r.call_id for r in session.messages[2].tool_results] == ["call_a", "call_b"]
    roles = await next_prompt_works(session, fake_provider)
    body = texts(fake_provider.requests[-1])
    assert "peeked at a" in body and "peeked at b" in body
    if fmt[0] == "anthropic":
        assert roles == ["user", "assistant", "user", "assistant", "user"]


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_cut_while_a_tool_call_streams_drops_the_half_call(tmp_path, fake_provider, fmt):
    reply = Reply(text="Let me check", tool_calls=[("peek", {"what": "a long argument"})],
                  pieces=6)
    # Cut inside the tool call's arguments (past the text, before the step's end).
    cut = {"chat": 10, "responses": 14, "anthropic": 12}[fmt[1] or "anthropic"]
    fake_provider.script(Reply.drop_after(cut, reply))
    session = open_session(tmp_path, fake_provider, fmt)
    events = await collect(session, "check")
    error_of(events)
    assert any(isinstance(e, ev.ToolStartEvent) for e in events)  # the call began...
    assert not any(isinstance(e, ev.ToolCallEvent) for e in events)  # ...and never ran
    assert session.messages[-1].text == "Let me check"
    assert all(not m.tool_calls for m in session.messages)
    await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_malformed_stream_is_a_clear_error(tmp_path, fake_provider, fmt):
    fake_provider.script(Reply.malformed())
    session = open_session(tmp_path, fake_provider, fmt, retries=2)
    error = error_of(await collect(session, "hello"))
    assert_human(error.error)
    assert "stream" in error.error
    assert [m.role for m in session.messages] == ["user"]
    await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_error_event_inside_the_stream(tmp_path, fake_provider, fmt):
    after = mid_text(fmt)
    fake_provider.script(Reply.stream_error("Overloaded", type="overloaded_error", after=after,
                                            reply=Reply("Partial words here", pieces=3)))
    session = open_session(tmp_path, fake_provider, fmt, retries=2)
    events = await collect(session, "hello")
    error = error_of(events)
    assert "Overloaded" in error.error and "stream error" in error.error
    assert_human(error.error)
    shown = shown_text(events)
    assert shown and session.messages[-1].text == shown
    assert await next_prompt_works(session, fake_provider) == ["user", "assistant", "user"]


# ---- stalls -----------------------------------------------------------------------------------


# The SDK's read timeout (``request_timeout``) is LONG and fired by moving the event loop's
# clock (its timeouts are kept on it) past it plus SLACK: the read being timed starts a
# little after the moment the test knows of (the request's arrival, the words shown).  The
# stream's own idle deadline (60 s by default) stays further off.
SLACK = 5


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_stall_past_the_timeout_is_a_clear_error(tmp_path, fake_provider, fmt):
    fake_provider.script(Reply.stall(60))
    session = open_session(tmp_path, fake_provider, fmt, request_timeout=LONG)
    clock = LoopClock()
    turn = Turn(session, "hello")
    await until(lambda: fake_provider.requests, "the request")
    clock.move_past(fake_provider.requests[0].time, LONG + SLACK)
    error = error_of(await turn.ended())
    assert "timed out" in error.error  # the client's timeout, not the server closing at 60 s
    assert_human(error.error)
    await next_prompt_works(session, fake_provider)


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_stall_mid_answer_keeps_the_partial_answer(tmp_path, fake_provider, fmt):
    after = mid_text(fmt)
    fake_provider.script(Reply.stall(60, after=after, reply=Reply("Half of it", pieces=3)))
    session = open_session(tmp_path, fake_provider, fmt, retries=1, request_timeout=LONG)
    clock = LoopClock()
    turn = Turn(session, "hello")
    await until(lambda: shown_text(turn.events), "some of the answer")
    clock.move_past(time.monotonic(), LONG + SLACK)
    events = await turn.ended()
    error = error_of(events)
    assert "timed out" in error.error
    shown = shown_text(events)
    assert shown and session.messages[-1].text == shown
    assert len(fake_provider.requests) == 1
    assert await next_prompt_works(session, fake_provider) == ["user", "assistant", "user"]


# ---- text no encoder accepts ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS, ids=IDS)
async def test_a_lone_surrogate_from_the_model_does_not_poison_the_session(tmp_path,
                                                                          fake_provider, fmt):
    # The JSON escape \ud800 decodes to a lone surrogate that UTF-8 cannot encode; kept as
    # is, every later request (and the store) would fail.
    fake_provider.script(Reply("odd \ud800 text", tool_calls=[("peek", {"what": "\udcff"})]),
                         Reply.text("fine"))
    session = open_session(tmp_path, fake_provider, fmt)
    events = await collect(session, "hello \udcff")
    assert events[-1].reason == "end", events
    assert_valid_request(fake_provider.requests[1])
    sent = fake_provider.requests[1].raw.decode()
    assert "odd \ufffd text" in sent or "odd \\ufffd text" in sent
    await next_prompt_works(session, fake_provider)
    for message in session.messages:
        json.dumps(message.to_dict(), ensure_ascii=False).encode("utf-8")


# ---- a provider plugin with a bug ---------------------------------------------------------------


class BrokenProvider:
    label = "broken"

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: ProviderRequest):
        from agent.contract.providers import StepFinished, TextDelta, Usage

        self.calls += 1
        if self.calls == 1:
            yield TextDelta("half")
            raise KeyError("choices")
        yield TextDelta("whole")
        yield StepFinished(Message("assistant", [TextPart("whole")]), Usage())

    async def list_models(self):
        return []


async def test_a_provider_raising_anything_ends_the_turn_with_an_error(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    config, hooks = make_boot(ws, tmp_path / "home", builtins=[])
    provider = BrokenProvider()
    session = Session(Runtime(config=config, hooks=hooks, tools={}, provider=provider,
                              model="m"))
    events = await collect(session, "hi")
    error = error_of(events)
    assert error.kind == "internal" and "KeyError" in error.error
    assert [m.role for m in session.messages] == ["user", "assistant"]
    assert session.messages[-1].text == "half"
    again = await collect(session, "again")
    assert again[-1].reason == "end"
